import os from 'node:os';
import { loadNativeAddon, nativeAddonAvailable } from '@abacus/runtime';
import { Prng } from '@abacus/samples';
import { rankScores, weightedAuc, weightedLogloss } from './weighted-auc';

export interface PairedDelta {
  /** metric(B) - metric(A) on the full test set */
  delta: number;
  /** bootstrap mean of the paired difference */
  mean: number;
  std: number;
  ciLow: number;
  ciHigh: number;
  replicates: number;
}

/**
 * Paired bootstrap of AUC and logloss differences between two models' predictions on the same test
 * rows: each replicate resamples rows (with replacement) once and scores both models on it, so the
 * interval reflects test-set sampling, and the pairing removes most of its variance.
 */
export function pairedBootstrap(
  labels: Float32Array,
  predA: Float32Array,
  predB: Float32Array,
  opts: { replicates: number; seed: number; alpha: number },
): { auc: PairedDelta; logloss: PairedDelta } {
  const n = labels.length;
  if (predA.length !== n || predB.length !== n) throw new Error('pairedBootstrap: predictions and labels differ in length');
  const ra = rankScores(predA);
  const rb = rankScores(predB);
  const ones = new Uint16Array(n).fill(1);
  const aucFull = weightedAuc(rb, labels, ones) - weightedAuc(ra, labels, ones);
  const llFull = weightedLogloss(predB, labels, ones) - weightedLogloss(predA, labels, ones);
  const rng = new Prng(opts.seed);
  const w = new Uint16Array(n);
  const dAuc: number[] = [];
  const dLl: number[] = [];
  for (let b = 0; b < opts.replicates; b++) {
    w.fill(0);
    for (let i = 0; i < n; i++) w[Math.min(n - 1, Math.floor(rng.next() * n))]++;
    const a = weightedAuc(rb, labels, w) - weightedAuc(ra, labels, w);
    if (Number.isFinite(a)) dAuc.push(a);
    dLl.push(weightedLogloss(predB, labels, w) - weightedLogloss(predA, labels, w));
  }
  return { auc: summarize(aucFull, dAuc, opts.alpha), logloss: summarize(llFull, dLl, opts.alpha) };
}

/**
 * Paired bootstrap over test rows of the seed-averaged AUC difference: seed k of B is paired with seed k
 * of A, each replicate resamples rows once and scores every model on it, so the interval covers test-set
 * sampling of the mean gain over training seeds.
 */
export function pairedSeedBootstrap(
  labels: Float32Array,
  predsA: Float32Array[],
  predsB: Float32Array[],
  opts: { replicates: number; seed: number; alpha: number },
): { auc: PairedDelta; perSeed: number[] } {
  const n = labels.length;
  if (!predsA.length || predsA.length !== predsB.length)
    throw new Error('pairedSeedBootstrap: need the same number of seeds on both sides');
  for (const p of [...predsA, ...predsB]) {
    if (p.length !== n) throw new Error('pairedSeedBootstrap: predictions and labels differ in length');
  }
  const ra = predsA.map(rankScores);
  const rb = predsB.map(rankScores);
  const delta = (w: Uint16Array) => {
    let s = 0;
    for (let k = 0; k < ra.length; k++) s += weightedAuc(rb[k], labels, w) - weightedAuc(ra[k], labels, w);
    return s / ra.length;
  };
  const ones = new Uint16Array(n).fill(1);
  const perSeed = ra.map((_, k) => weightedAuc(rb[k], labels, ones) - weightedAuc(ra[k], labels, ones));
  const full = perSeed.reduce((a, b) => a + b, 0) / perSeed.length;
  const rng = new Prng(opts.seed);
  const w = new Uint16Array(n);
  const xs: number[] = [];
  for (let b = 0; b < opts.replicates; b++) {
    w.fill(0);
    for (let i = 0; i < n; i++) w[Math.min(n - 1, Math.floor(rng.next() * n))]++;
    const d = delta(w);
    if (Number.isFinite(d)) xs.push(d);
  }
  return { auc: summarize(full, xs, opts.alpha), perSeed };
}

/**
 * pairedSeedBootstrap's result, its replicates computed natively on `threads` threads (default every
 * core) off the event loop: the same numbers, bit for bit (the same draws and the same sums in the same
 * order). Falls back to the JS loop where the native addon is not built.
 */
export async function pairedSeedBootstrapAsync(
  labels: Float32Array,
  predsA: Float32Array[],
  predsB: Float32Array[],
  opts: { replicates: number; seed: number; alpha: number; threads?: number },
): Promise<{ auc: PairedDelta; perSeed: number[] }> {
  // NaN scores (a diverged model) have no order the native ranking could share with JS's sort
  if (!nativeAddonAvailable() || [...predsA, ...predsB].some((p) => p.some(Number.isNaN)))
    return pairedSeedBootstrap(labels, predsA, predsB, opts);
  const out = await loadNativeAddon().pairedSeedBootstrap(
    labels,
    predsA,
    predsB,
    opts.replicates,
    opts.seed >>> 0,
    Math.max(1, Math.floor(opts.threads ?? os.availableParallelism())),
  );
  const k = predsA.length;
  const perSeed = Array.from(out.subarray(0, k));
  const full = perSeed.reduce((a, b) => a + b, 0) / perSeed.length;
  const xs: number[] = [];
  for (const d of out.subarray(k)) if (Number.isFinite(d)) xs.push(d);
  return { auc: summarize(full, xs, opts.alpha), perSeed };
}

/** Percentile interval of the bootstrap distribution. */
function summarize(full: number, xs: number[], alpha: number): PairedDelta {
  const sorted = [...xs].sort((a, b) => a - b);
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  const std = Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(1, xs.length - 1));
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(p * (sorted.length - 1))))];
  return { delta: full, mean, std, ciLow: q(alpha / 2), ciHigh: q(1 - alpha / 2), replicates: xs.length };
}
