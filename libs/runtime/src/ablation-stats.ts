/** Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom (larger: normal). */
const T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

export interface ChangeSummary {
  /** one metric change (permuted - baseline) per repeat */
  deltas: number[];
  mean: number;
  /** sample standard deviation over repeats (0 for one repeat) */
  std: number;
  /**
   * 95% interval of the mean change. With fold deltas: t-interval over F contiguous evaluation
   * folds (each fold's change averaged over repeats), so it carries both the permutation noise
   * and the evaluation-set noise; without: t-interval over repeats.
   */
  ci95: [number, number];
}

function tQuantile(df: number): number {
  return df <= 0 ? 0 : df <= 30 ? T975[df - 1]! : 1.96;
}

function meanStd(x: number[]): [number, number] {
  const n = x.length;
  const m = x.reduce((a, b) => a + b, 0) / n;
  return [m, n > 1 ? Math.sqrt(x.reduce((a, b) => a + (b - m) ** 2, 0) / (n - 1)) : 0];
}

export function summarizeChanges(deltas: number[], foldDeltas?: number[]): ChangeSummary {
  const [mean, std] = meanStd(deltas);
  let half: number;
  if (foldDeltas && foldDeltas.length > 1) {
    const [, fs] = meanStd(foldDeltas);
    half = (tQuantile(foldDeltas.length - 1) * fs) / Math.sqrt(foldDeltas.length);
  } else half = (tQuantile(deltas.length - 1) * std) / Math.sqrt(deltas.length);
  return { deltas, mean, std, ci95: [mean - half, mean + half] };
}
