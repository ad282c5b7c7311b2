import { selectRows, type ColumnarDataset } from '@abacus/runtime';

/** The rows `idx` of a columnar dataset (copies; for test folds, never for training data). */
export const subsetDataset = (ds: ColumnarDataset, idx: Uint32Array | number[]): ColumnarDataset => selectRows(ds, idx);

/** K disjoint folds of 0..rows-1 after a seeded shuffle, each sorted (deterministic for a seed). */
export function foldIndices(rows: number, folds: number, seed: number): Uint32Array[] {
  const perm = new Uint32Array(rows);
  for (let i = 0; i < rows; i++) perm[i] = i;
  let s = (seed ^ 0x5bd1e995) >>> 0 || 1;
  for (let i = rows - 1; i > 0; i--) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    const j = s % (i + 1);
    const t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  const out: Uint32Array[] = [];
  for (let k = 0; k < folds; k++) {
    const lo = Math.floor((k * rows) / folds);
    const hi = Math.floor(((k + 1) * rows) / folds);
    out.push(perm.slice(lo, hi).sort());
  }
  return out;
}

/**
 * The rows K folds read, laid out fold after fold so that one copy of them holds every fold as a
 * range (rowRange): `order` lists the rows of fold 0 (as foldIndices gives them), then fold 1's, and
 * so on; fold k is `order[bounds[k]..bounds[k + 1])`. With `among` (a sample of rows, say) the folds
 * split those rows instead of 0..rows-1: the same folds as foldIndices over a copy of them.
 */
export function foldOrder(
  rows: number,
  folds: number,
  seed: number,
  among?: Uint32Array,
): { order: Uint32Array; bounds: number[] } {
  const n = among ? among.length : rows;
  const order = new Uint32Array(n);
  const bounds = [0];
  let at = 0;
  for (const idx of foldIndices(n, folds, seed)) {
    for (let i = 0; i < idx.length; i++) order[at + i] = among ? among[idx[i]!]! : idx[i]!;
    at += idx.length;
    bounds.push(at);
  }
  return { order, bounds };
}

/** `n` of the rows 0..rows-1 drawn without replacement by a seeded shuffle, sorted (all of them when n >= rows). */
export function sampleRows(rows: number, n: number, seed: number): Uint32Array {
  if (n >= rows) return Uint32Array.from({ length: rows }, (_, i) => i);
  const perm = new Uint32Array(rows);
  for (let i = 0; i < rows; i++) perm[i] = i;
  let s = (seed ^ 0x2545f491) >>> 0 || 1;
  // a partial Fisher-Yates: the first n places
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    const j = i + (s % (rows - i));
    const t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  return perm.slice(0, n).sort();
}

/**
 * The same rows with some inputs switched off: numeric columns held at `numericValue` (the model's
 * normalization mean, so they read 0 after normalization), slots given empty bags (a zero pooled
 * embedding). Labels, weights, keys and the other slots are shared, not copied.
 */
export function switchOff(ds: ColumnarDataset, off: string[], numericValue: (name: string) => number): ColumnarDataset {
  const gone = new Set(off);
  const cols = ds.numericNames.flatMap((n, j) => (gone.has(n) ? [[j, numericValue(n)] as const] : []));
  let numeric = ds.numeric;
  if (cols.length) {
    numeric = ds.numeric.slice();
    const w = ds.numericNames.length;
    for (let i = 0; i < ds.rows; i++) for (const [j, v] of cols) numeric[i * w + j] = v;
  }
  const empty = { ids: new Int32Array(0), offsets: new Int32Array(ds.rows + 1) };
  return { ...ds, numeric, slots: ds.slots.map((s) => (gone.has(s.name) ? { name: s.name, ...empty } : s)) };
}
