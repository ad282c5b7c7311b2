/**
 * The discover screen: how much a candidate adds to the base model, measured cheaply. The base
 * model's logit is the offset; the candidate is cut into bins (quantiles of a number, the ids of a
 * category) and each bin gets one Newton step of the log loss, fitted on one half of the screen rows
 * and scored on the other, then the other way round (cross-fitting: a candidate cannot score by
 * fitting noise). The score is the mean log-loss reduction per row. This is one boosting round of a
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
    // ids as they are, renumbered densely; missing its own bin
    const map = new Map<number, number>();
    const bin = new Int32Array(v.ids.length);
    for (let i = 0; i < v.ids.length; i++) {
      const id = v.ids[i] < 0 ? -1 : v.ids[i];
      let b = map.get(id);
      if (b === undefined) map.set(id, (b = map.size));
      bin[i] = b;
    }
    return { bin, bins: Math.max(1, map.size) };
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

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
const loss = (y: number, p: number) => -(y * Math.log(Math.max(p, 1e-12)) + (1 - y) * Math.log(Math.max(1 - p, 1e-12)));

/** Newton steps per bin fitted on the rows where keep(i) */
function steps(bin: Int32Array, bins: number, rows: ScreenRows, keep: (i: number) => boolean): Float64Array {
  const g = new Float64Array(bins);
  const h = new Float64Array(bins);
  for (let i = 0; i < bin.length; i++) {
    if (!keep(i)) continue;
    const p = sigmoid(rows.logit[i]);
    g[bin[i]] += rows.label[i] - p;
    h[bin[i]] += p * (1 - p);
  }
  const w = new Float64Array(bins);
  for (let b = 0; b < bins; b++) w[b] = g[b] / (h[b] + SCREEN_LAMBDA * 0.25);
  return w;
}

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

function rawScore({ bin, bins }: { bin: Int32Array; bins: number }, rows: ScreenRows): ScreenScore {
  const halves: [number, number] = [0, 0];
  for (const fit of [0, 1] as const) {
    const w = steps(bin, bins, rows, (i) => rows.half[i] === fit);
    let s = 0;
    let n = 0;
    for (let i = 0; i < bin.length; i++) {
      if (rows.half[i] === fit) continue;
      const z = rows.logit[i];
      const y = rows.label[i];
      s += loss(y, sigmoid(z)) - loss(y, sigmoid(z + w[bin[i]]));
      n++;
    }
    halves[1 - fit] = n ? s / n : 0;
  }
  return { gain: (halves[0] + halves[1]) / 2, halves };
}

/** What a candidate adds, row by row (its steps fitted on every screen row): compared to find near-copies. */
export function screenEncoding(v: ScreenValues, rows: ScreenRows): Float32Array {
  const { bin, bins } = binsOf(v);
  const w = steps(bin, bins, rows, () => true);
  return Float32Array.from(bin, (b) => w[b]);
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
