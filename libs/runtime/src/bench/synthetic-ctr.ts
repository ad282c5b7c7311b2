import type { ColumnarDataset } from '../dataset.types';
import { mulberry32 } from '../tfjs-backend';

export interface SyntheticCtrOptions {
  rows: number;
  numeric: number;
  slots: number;
  vocab: number;
  /** ids per sample and slot: 1..maxLen */
  maxLen: number;
  /** per slot, its own maxLen (slots past the list: maxLen) */
  slotMaxLen?: number[];
  /** per slot, its own vocabulary (slots past the list: vocab); ids uniform over it */
  slotVocab?: number[];
  seed: number;
  /** probability that an id is replaced by padding (-1) */
  padding?: number;
  /** ids Zipf-distributed over the vocabulary with this exponent (id k drawn with weight 1 / (k + 1)^zipf) instead of uniform */
  zipf?: number;
}

export interface ZipfTable {
  cdf: Float64Array;
  guide: Int32Array;
  acc: number;
  G: number;
}

function zipfTable(vocab: number, alpha: number): ZipfTable {
  const cdf = new Float64Array(vocab);
  let acc = 0;
  for (let k = 0; k < vocab; k++) cdf[k] = acc += 1 / Math.pow(k + 1, alpha);
  const G = Math.min(vocab, 1 << 20);
  const guide = new Int32Array(G + 1); // guide[j]: the first id whose CDF reaches j / G of the total
  for (let j = 0, k = 0; j <= G; j++) {
    const u = (j / G) * acc;
    while (k < vocab - 1 && cdf[k]! < u) k++;
    guide[j] = k;
  }
  return { cdf, guide, acc, G };
}

/**
 * Draws ids 0..vocab-1 with P(k) proportional to 1 / (k + 1)^alpha (inverse CDF, binary search). A
 * guide table of up to 2^20 equal steps of the CDF bounds each search to a few neighbouring steps
 * (the same id as a search of the whole CDF, in a few probes at tens of millions of ids). `memo`
 * shares the tables between samplers of one vocabulary and exponent.
 */
export function zipfSampler(vocab: number, alpha: number, r: () => number, memo?: Map<string, ZipfTable>): () => number {
  const key = `${vocab}:${alpha}`;
  const t = memo?.get(key) ?? zipfTable(vocab, alpha);
  memo?.set(key, t);
  const { cdf, guide, acc, G } = t;
  return () => {
    const u = r() * acc;
    const j = Math.min(G - 1, Math.floor((u / acc) * G));
    // a step either side of u's: the answer lies in them whatever the rounding of j
    let lo = j > 0 ? guide[j - 1]! : 0,
      hi = guide[Math.min(G, j + 2)]!;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/**
 * Synthetic CTR samples with the planted signal of shared/bench/torch_ctr_baseline.py:
 * logit = 1.5 * x0 + (slot0 first id % 2) - 0.5 + 2 * (slot1 first id < V/10) - 1.
 */
export function makeSyntheticCtr(o: SyntheticCtrOptions): { dataset: ColumnarDataset; trueLogit: Float32Array } {
  const r = mulberry32(o.seed);
  const gauss = () => Math.sqrt(-2 * Math.log(Math.max(r(), 1e-300))) * Math.cos(2 * Math.PI * r());
  const n = o.rows;
  const numeric = new Float32Array(n * o.numeric);
  for (let i = 0; i < numeric.length; i++) numeric[i] = gauss();
  const memo = new Map<string, ZipfTable>();
  const slots = Array.from({ length: o.slots }, (_, s) => {
    const offsets = new Int32Array(n + 1);
    const ids: number[] = [];
    const most = o.slotMaxLen?.[s] ?? o.maxLen;
    const vocab = o.slotVocab?.[s] ?? o.vocab;
    const draw = o.zipf ? zipfSampler(vocab, o.zipf, r, memo) : () => Math.floor(r() * vocab);
    for (let i = 0; i < n; i++) {
      const len = 1 + Math.floor(r() * most);
      for (let k = 0; k < len; k++) ids.push(o.padding && k > 0 && r() < o.padding ? -1 : draw());
      offsets[i + 1] = ids.length;
    }
    return { name: `slot${s}`, ids: Int32Array.from(ids), offsets };
  });
  const trueLogit = new Float32Array(n);
  const labels = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let z = o.numeric > 0 ? 1.5 * numeric[i * o.numeric]! : 0;
    if (o.slots > 0) z += (slots[0]!.ids[slots[0]!.offsets[i]!]! % 2) - 0.5;
    if (o.slots > 1) z += 2 * (slots[1]!.ids[slots[1]!.offsets[i]!]! < o.vocab / 10 ? 1 : 0) - 1;
    trueLogit[i] = z;
    labels[i] = r() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
  }
  return {
    dataset: { rows: n, numericNames: Array.from({ length: o.numeric }, (_, j) => `num${j}`), numeric, slots, labels },
    trueLogit,
  };
}

/** Rows [from, to) of a dataset as a new dataset (copies; for train/test splits in tests and benches). */
export function sliceDataset(d: ColumnarDataset, from: number, to: number): ColumnarDataset {
  const n = to - from, w = d.numericNames.length;
  const out: ColumnarDataset = {
    rows: n,
    numericNames: d.numericNames,
    numeric: d.numeric.slice(from * w, to * w),
    labels: d.labels.slice(from, to),
    slots: d.slots.map((s) => {
      const o0 = s.offsets[from]!;
      return { name: s.name, ids: s.ids.slice(o0, s.offsets[to]!), offsets: s.offsets.slice(from, to + 1).map((v) => v - o0) };
    }),
  };
  if (d.weights) out.weights = d.weights.slice(from, to);
  if (d.keys) out.keys = Object.fromEntries(Object.entries(d.keys).map(([k, v]) => [k, v.slice(from, to)]));
  return out;
}
