/**
 * The discover screen: how much a candidate adds to the base model, measured cheaply. The base
 * model's logit is the offset; the candidate is cut into bins (quantiles of a number, the ids of a
 * category) and each bin gets one Newton step of the log loss, fitted on one half of the screen rows
 * and scored on the other, then the other way round (cross-fitting: a candidate cannot score by
 * fitting noise). The score is the mean log-loss reduction per row, to second order. This is one boosting round of a
 * one-feature tree with the base model as its start, the idea of OpenFE's FeatureBoost, without a
 * library: a histogram pass per candidate.
 */

/** A candidate's values on the screen rows: a number per row, or a category id per row (< 0: missing). */
export type ScreenValues = { kind: 'numeric'; values: Float32Array } | { kind: 'categorical'; ids: Int32Array };

export interface ScreenRows {
  /** the base model's logit per row */
  logit: Float64Array;
  /** 0 / 1 */
  label: Float32Array;
  /** 0 or 1: the half a row belongs to */
  half: Uint8Array;
}

/** quantile bins of a number at most */
export const SCREEN_BINS = 16;
/** values the quantile cut points of a number are taken from at most */
export const QUANTILE_SAMPLE = 20_000;
/** the L2 penalty of a bin's step (in rows' worth of curvature at p = 0.5: 80 rows) */
export const SCREEN_LAMBDA = 20;

/** Bin per row (0..bins-1; the last bin holds missing values) and the bin count. */
export function binsOf(v: ScreenValues): { bin: Int32Array; bins: number } {
  if (v.kind === 'categorical') {
    // ids as they are, renumbered densely in order of appearance; missing its own bin
    const ids = v.ids;
    const bin = new Int32Array(ids.length);
    let max = -1;
    for (let i = 0; i < ids.length; i++) if (ids[i] > max) max = ids[i];
    let next = 0;
    if (max < 1 << 22) {
      // a lookup table over the ids (hashed crosses stay under 2^24 buckets; most are far smaller)
      const dense = new Int32Array(max + 2).fill(-1);
      for (let i = 0; i < ids.length; i++) {
        const k = ids[i] < 0 ? max + 1 : ids[i];
        let b = dense[k];
        if (b < 0) b = dense[k] = next++;
        bin[i] = b;
      }
    } else {
      const map = new Map<number, number>();
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i] < 0 ? -1 : ids[i];
        let b = map.get(id);
        if (b === undefined) map.set(id, (b = next++));
        bin[i] = b;
      }
    }
    return { bin, bins: Math.max(1, next) };
  }
  const x = v.values;
  // the cut points from an even sample of at most QUANTILE_SAMPLE values (sorting every row of every
  // candidate was half the screen's time); no label is read, so the halves stay independent
  const step = Math.max(1, Math.floor(x.length / QUANTILE_SAMPLE));
  const sample: number[] = [];
  for (let i = 0; i < x.length; i += step) if (Number.isFinite(x[i])) sample.push(x[i]);
  const finite = Float64Array.from(sample).sort();
  const cuts: number[] = [];
  for (let k = 1; k < SCREEN_BINS; k++) {
    const c = finite[Math.floor((k * finite.length) / SCREEN_BINS)];
    if (c !== undefined && (cuts.length === 0 || c > cuts[cuts.length - 1])) cuts.push(c);
  }
  const bin = new Int32Array(x.length);
  const missing = cuts.length + 1;
  for (let i = 0; i < x.length; i++) {
    const t = x[i];
    if (!Number.isFinite(t)) {
      bin[i] = missing;
      continue;
    }
    let lo = 0;
    let hi = cuts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (t >= cuts[mid]) lo = mid + 1;
      else hi = mid;
    }
    bin[i] = lo;
  }
  return { bin, bins: missing + 1 };
}

/**
 * What every candidate's score needs from the screen rows, computed once: the log loss's gradient
 * (y − p) and curvature p(1 − p) at the base model's logit, per row.
 */
interface RowMoments {
  g: Float64Array;
  h: Float64Array;
  /** rows per half */
  n: [number, number];
}
const moments = new WeakMap<ScreenRows, RowMoments>();
function momentsOf(rows: ScreenRows): RowMoments {
  let m = moments.get(rows);
  if (!m) {
    const n = rows.logit.length;
    const g = new Float64Array(n);
    const h = new Float64Array(n);
    const count: [number, number] = [0, 0];
    for (let i = 0; i < n; i++) {
      const p = 1 / (1 + Math.exp(-rows.logit[i]));
      g[i] = rows.label[i] - p;
      h[i] = p * (1 - p);
      count[rows.half[i]]++;
    }
    moments.set(rows, (m = { g, h, n: count }));
  }
  return m;
}

/** per half and bin: the sums of the gradient and curvature ([half * bins + bin]) */
function binSums(bin: Int32Array, bins: number, rows: ScreenRows): { G: Float64Array; H: Float64Array } {
  const { g, h } = momentsOf(rows);
  const G = new Float64Array(2 * bins);
  const H = new Float64Array(2 * bins);
  const half = rows.half;
  for (let i = 0; i < bin.length; i++) {
    const k = half[i] * bins + bin[i];
    G[k] += g[i];
    H[k] += h[i];
  }
  return { G, H };
}

/** the Newton step of a bin with sums G, H (L2-penalised) */
const step = (G: number, H: number) => G / (H + SCREEN_LAMBDA * 0.25);

export interface ScreenScore {
  /** mean log-loss reduction per row, cross-fitted (the two halves' mean) */
  gain: number;
  /** each half's */
  halves: [number, number];
}

/**
 * The cross-fitted screen score of one candidate, less what a constant gets (re-centring the base
 * model's offset on the screen rows helps every candidate alike: it is not the candidate's).
 */
export function screenScore(v: ScreenValues, rows: ScreenRows): ScreenScore {
  const own = rawScore(binsOf(v), rows);
  const constant = baseline(rows);
  return { gain: own.gain - constant.gain, halves: [own.halves[0] - constant.halves[0], own.halves[1] - constant.halves[1]] };
}

const baselines = new WeakMap<ScreenRows, ScreenScore>();
function baseline(rows: ScreenRows): ScreenScore {
  let b = baselines.get(rows);
  if (!b) baselines.set(rows, (b = rawScore({ bin: new Int32Array(rows.logit.length), bins: 1 }, rows)));
  return b;
}

/**
 * Each half's steps scored on the other half. The log-loss reduction of a step w on the rows of a bin
 * is taken to second order, G·w − H·w²/2 with G, H that bin's sums on the scored half (as gradient
 * boosting's split gain is): exact for the quadratic the step is fitted on, and one pass of sums per
 * candidate with no logarithm per row.
 */
function rawScore({ bin, bins }: { bin: Int32Array; bins: number }, rows: ScreenRows): ScreenScore {
  const { G, H } = binSums(bin, bins, rows);
  const { n } = momentsOf(rows);
  const halves: [number, number] = [0, 0];
  for (const fit of [0, 1] as const) {
    const other = 1 - fit;
    let s = 0;
    for (let b = 0; b < bins; b++) {
      const w = step(G[fit * bins + b], H[fit * bins + b]);
      s += G[other * bins + b] * w - 0.5 * H[other * bins + b] * w * w;
    }
    halves[other] = n[other] ? s / n[other] : 0;
  }
  return { gain: (halves[0] + halves[1]) / 2, halves };
}

/** What a candidate adds, row by row (its steps fitted on every screen row): compared to find near-copies. */
export function screenEncoding(v: ScreenValues, rows: ScreenRows): Float32Array {
  return binnedEncoding(binsOf(v), rows);
}

/** screenEncoding of binned values */
export function binnedEncoding({ bin, bins }: Binned, rows: ScreenRows): Float32Array {
  const { G, H } = binSums(bin, bins, rows);
  const w = new Float64Array(bins);
  for (let b = 0; b < bins; b++) w[b] = step(G[b] + G[bins + b], H[b] + H[bins + b]);
  return Float32Array.from(bin, (b) => w[b]);
}

/** A candidate's bins on the screen rows (binsOf), kept for the selection. */
export interface Binned {
  bin: Int32Array;
  bins: number;
}

/** The cross-fitted screen score of binned values, less what a constant gets (see screenScore). */
export function binnedScore(b: Binned, rows: ScreenRows): ScreenScore {
  const own = rawScore(b, rows);
  const constant = baseline(rows);
  return { gain: own.gain - constant.gain, halves: [own.halves[0] - constant.halves[0], own.halves[1] - constant.halves[1]] };
}

/**
 * Forward selection over `pool` (in screen order): each round scores every remaining candidate against
 * the base model's logit plus the steps of the candidates chosen so far (fitted on every screen row),
 * and takes the best while it adds something (a positive cross-fitted gain). A candidate that carries
 * what a chosen one already carries (the same column under another transform, a product with it)
 * scores about zero once that one is in, and gives its place to one that carries something else.
 * Returns the chosen indexes of `pool` with the gain each had when chosen.
 */
export function selectForward(pool: Binned[], rows: ScreenRows, topK: number): { index: number; gain: number }[] {
  const chosen: { index: number; gain: number }[] = [];
  const left = new Set(pool.map((_, i) => i));
  let current: ScreenRows = rows;
  while (chosen.length < topK && left.size) {
    let best = -1;
    let bestGain = 0;
    for (const i of left) {
      const g = binnedScore(pool[i], current).gain;
      if (g > bestGain) {
        best = i;
        bestGain = g;
      }
    }
    if (best < 0) break;
    chosen.push({ index: best, gain: bestGain });
    left.delete(best);
    const { bin, bins } = pool[best];
    const { G, H } = binSums(bin, bins, current);
    const w = new Float64Array(bins);
    for (let b = 0; b < bins; b++) w[b] = step(G[b] + G[bins + b], H[b] + H[bins + b]);
    const logit = Float64Array.from(current.logit, (z, r) => z + w[bin[r]]);
    current = { logit, label: rows.label, half: rows.half };
  }
  return chosen;
}

/** Pearson correlation (0 where either is constant). */
export function correlation(a: Float32Array, b: Float32Array): number {
  const n = a.length;
  let ma = 0;
  let mb = 0;
  for (let i = 0; i < n; i++) {
    ma += a[i];
    mb += b[i];
  }
  ma /= n;
  mb /= n;
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < n; i++) {
    const x = a[i] - ma;
    const y = b[i] - mb;
    sab += x * y;
    saa += x * x;
    sbb += y * y;
  }
  return saa > 0 && sbb > 0 ? sab / Math.sqrt(saa * sbb) : 0;
}

/** the correlation of two candidates' encodings above which the weaker is a near-copy */
export const NEAR_COPY = 0.95;

/**
 * Keeps candidates in score order, leaving out each whose encoding correlates above NEAR_COPY with one
 * already kept; returns the kept indexes and, for each dropped one, the one it copies.
 */
export function dropNearCopies(order: number[], encodings: Map<number, Float32Array>): { kept: number[]; copies: Map<number, number> } {
  const kept: number[] = [];
  const copies = new Map<number, number>();
  for (const i of order) {
    const e = encodings.get(i)!;
    const twin = kept.find((k) => Math.abs(correlation(e, encodings.get(k)!)) > NEAR_COPY);
    if (twin === undefined) kept.push(i);
    else copies.set(i, twin);
  }
  return { kept, copies };
}
