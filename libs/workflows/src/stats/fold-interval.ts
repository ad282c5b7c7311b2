/** Two-sided Student t quantile for 1 - alpha/2 (alpha 0.05 / 0.1 / 0.01), small degrees of freedom. */
export function tQuantile(df: number, alpha: number): number {
  const table: Record<string, number[]> = {
    // df = 1..30
    '0.05': [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042],
    '0.1': [6.314, 2.92, 2.353, 2.132, 2.015, 1.943, 1.895, 1.86, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.74, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697],
    '0.01': [63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.25, 3.169, 3.106, 3.055, 3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756, 2.75],
  };
  const z: Record<string, number> = { '0.05': 1.96, '0.1': 1.645, '0.01': 2.576 };
  const key = String(alpha);
  if (!table[key]) throw new Error(`alpha must be 0.01, 0.05 or 0.1 (got ${alpha})`);
  return df <= 30 ? table[key][Math.max(1, df) - 1] : z[key];
}

export interface FoldEstimate {
  mean: number;
  std: number;
  ciLow: number;
  ciHigh: number;
  folds: number;
}

/** Mean of per-fold estimates with a t interval: the spread across disjoint test folds is the sampling error. */
export function foldInterval(values: number[], alpha: number): FoldEstimate {
  const k = values.length;
  const mean = values.reduce((s, x) => s + x, 0) / k;
  const std = k > 1 ? Math.sqrt(values.reduce((s, x) => s + (x - mean) ** 2, 0) / (k - 1)) : 0;
  const half = k > 1 ? tQuantile(k - 1, alpha) * (std / Math.sqrt(k)) : 0;
  return { mean, std, ciLow: mean - half, ciHigh: mean + half, folds: k };
}
