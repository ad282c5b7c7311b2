import { tQuantile } from './fold-interval';

export interface SeedRowInterval {
  /** mean over seeds of the per-seed difference */
  mean: number;
  ciLow: number;
  ciHigh: number;
  /** standard error from row sampling (bootstrap std of the seed-averaged difference) */
  rowSe: number;
  /** standard error from training seeds (std of the per-seed differences / sqrt(seeds)) */
  seedSe: number;
  /** Welch–Satterthwaite degrees of freedom of the combined error (rounded down) */
  df: number;
  covers: ['evaluation rows', 'training seeds'];
}

/**
 * Interval of a seed-paired difference that covers both sources of variance: the rows it was
 * evaluated on (the bootstrap std of the seed-averaged difference, rows resampled once per
 * replicate for every seed) and training randomness (the spread of the per-seed differences, seed k
 * of one model paired with seed k of the other). The two are added as independent variances; the
 * t quantile uses Welch–Satterthwaite degrees of freedom (the row part counts as known exactly), so
 * with few seeds and a seed-dominated error the interval is as wide as a t interval over seeds.
 */
export function seedRowInterval(perSeed: number[], rowSe: number, alpha: number): SeedRowInterval {
  const k = perSeed.length;
  const mean = perSeed.reduce((a, b) => a + b, 0) / k;
  const sd = k > 1 ? Math.sqrt(perSeed.reduce((s, x) => s + (x - mean) ** 2, 0) / (k - 1)) : 0;
  const seedVar = k > 1 ? (sd * sd) / k : 0;
  const rowVar = rowSe * rowSe;
  const total = seedVar + rowVar;
  const df = seedVar > 0 ? Math.max(k - 1, Math.min(1000, Math.floor((total * total * (k - 1)) / (seedVar * seedVar)))) : 1000;
  const half = tQuantile(df, alpha) * Math.sqrt(total);
  return {
    mean,
    ciLow: mean - half,
    ciHigh: mean + half,
    rowSe,
    seedSe: Math.sqrt(seedVar),
    df,
    covers: ['evaluation rows', 'training seeds'],
  };
}
