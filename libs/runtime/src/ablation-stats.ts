/** Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom (larger: normal). */
const T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

export interface ChangeSummary {
  /** one metric change (permuted - baseline) per repeat */
  deltas: number[];
  mean: number;
  /** sample standard deviation over repeats (0 for one repeat) */
  std: number;
  /** 95% t-interval of the mean change; [mean, mean] with one repeat */
  ci95: [number, number];
}

export function summarizeChanges(deltas: number[]): ChangeSummary {
  const n = deltas.length;
  const mean = deltas.reduce((a, b) => a + b, 0) / n;
  const std = n > 1 ? Math.sqrt(deltas.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)) : 0;
  const t = n > 1 ? (n - 1 <= 30 ? T975[n - 2]! : 1.96) : 0;
  const half = (t * std) / Math.sqrt(n);
  return { deltas, mean, std, ci95: [mean - half, mean + half] };
}
