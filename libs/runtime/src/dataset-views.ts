import { loadNativeAddon } from './binding';
import { isShardDataset, type ColumnarDataset, type RuntimeData, type ShardDataset } from './dataset.types';
import { checkColumnar, toNativeData } from './native-data.mapper';
import type { ModelSpec } from './model-spec.schema';

/**
 * Row views and copies of runtime data, the same for samples in memory and in mapped shards: a
 * range of shards is a view (nothing read), anything else a copy of just the rows asked for.
 */

/**
 * Rows [from, to) of columnar data: copies of its arrays, or (`view`) subarrays sharing them. Each
 * slot's offsets are copied either way, rebased to 0.
 */
function columnarRange(ds: ColumnarDataset, from: number, to: number, view: boolean): ColumnarDataset {
  const take = <A extends Float32Array | Int32Array>(a: A, lo: number, hi: number): A =>
    (view ? a.subarray(lo, hi) : a.slice(lo, hi)) as A;
  const w = ds.numericNames.length;
  const out: ColumnarDataset = {
    rows: to - from,
    numericNames: ds.numericNames,
    numeric: take(ds.numeric, from * w, to * w),
    slots: ds.slots.map((s) => {
      const base = s.offsets[from]!;
      const offsets = s.offsets.slice(from, to + 1);
      if (base) for (let i = 0; i < offsets.length; i++) offsets[i] = offsets[i]! - base;
      return { name: s.name, ids: take(s.ids, base, s.offsets[to]!), offsets };
    }),
    labels: take(ds.labels, from, to),
  };
  if (ds.weights) out.weights = take(ds.weights, from, to);
  if (ds.keys) out.keys = Object.fromEntries(Object.entries(ds.keys).map(([k, v]) => [k, take(v, from, to)]));
  return out;
}

/**
 * Rows [from, to) of columnar data sharing its arrays (numeric, ids, labels, weights and keys are
 * subarrays; only each slot's offsets are copied): a fold of rows copied once, fold after fold,
 * without a second copy.
 */
export function rowRange(ds: ColumnarDataset, from: number, to: number): ColumnarDataset {
  checkColumnar(ds);
  if (!(Number.isInteger(from) && Number.isInteger(to) && from >= 0 && from <= to && to <= ds.rows))
    throw new Error(`rowRange: [${from}, ${to}) is not a range of the ${ds.rows} rows`);
  return columnarRange(ds, from, to, true);
}

/** Rows [from, to) of shard data: a view of the shards that hold them. */
function sliceShards(ds: ShardDataset, from: number, to: number): ShardDataset {
  const shards: ShardDataset['shards'] = [];
  let at = 0;
  for (const s of ds.shards) {
    const lo = Math.max(from, at);
    const hi = Math.min(to, at + s.rows);
    if (lo < hi) shards.push({ ...s, start: (s.start ?? 0) + (lo - at), rows: hi - lo, total: s.total ?? s.rows });
    at += s.rows;
  }
  const out: ShardDataset = { ...ds, rows: to - from, shards };
  if (ds.weights) out.weights = ds.weights.subarray(from, to);
  return out;
}

/** Rows [from, to) of the data: a view of shards, a copy of columnar data. */
export function sliceRows<T extends RuntimeData>(ds: T, from: number, to: number): T {
  if (!(Number.isInteger(from) && Number.isInteger(to) && 0 <= from && from <= to && to <= ds.rows))
    throw new Error(`sliceRows: [${from}, ${to}) is not a range of the ${ds.rows} rows`);
  return (isShardDataset(ds) ? sliceShards(ds, from, to) : columnarRange(ds as ColumnarDataset, from, to, false)) as T;
}

/**
 * The rows of several ranges of shard data, one after another ([from, to) each, in order, not
 * overlapping): one view of the shards that hold them (per-row weights given beside the shards are
 * copied for the rows taken). Nothing of the samples is read.
 */
export function shardRanges(ds: ShardDataset, ranges: readonly (readonly [number, number])[]): ShardDataset {
  const shards: ShardDataset['shards'] = [];
  let rows = 0;
  let last = 0;
  for (const [from, to] of ranges) {
    if (!(Number.isInteger(from) && Number.isInteger(to) && last <= from && from <= to && to <= ds.rows))
      throw new Error(`shardRanges: [${from}, ${to}) is not a range of the ${ds.rows} rows after ${last}`);
    shards.push(...sliceShards(ds, from, to).shards);
    rows += to - from;
    last = to;
  }
  const out: ShardDataset = { ...ds, rows, shards };
  delete out.weights;
  if (ds.weights) {
    out.weights = new Float32Array(rows);
    let at = 0;
    for (const [from, to] of ranges) {
      out.weights.set(ds.weights.subarray(from, to), at);
      at += to - from;
    }
  }
  return out;
}

/** The rows of `a` then those of `b` (same columns): a view of both's shards, or a copy of columnar data. */
export function concatRows<T extends RuntimeData>(a: T, b: T): T {
  if (a.numericNames.join() !== b.numericNames.join() || a.slots.map((s) => s.name).join() !== b.slots.map((s) => s.name).join())
    throw new Error('concatRows: the datasets have different columns');
  if (isShardDataset(a) && isShardDataset(b)) {
    const out: ShardDataset = { ...a, rows: a.rows + b.rows, shards: [...a.shards, ...b.shards] };
    delete out.weights;
    if (a.weights || b.weights) {
      if (!a.weights || !b.weights) throw new Error('concatRows: per-row weights on one side only');
      out.weights = new Float32Array(a.rows + b.rows);
      out.weights.set(a.weights);
      out.weights.set(b.weights, a.rows);
    }
    return out as T;
  }
  if (isShardDataset(a) || isShardDataset(b)) throw new Error('concatRows: both must be in shards or both in memory');
  const x = a as ColumnarDataset;
  const y = b as ColumnarDataset;
  const n = x.rows + y.rows;
  const numeric = new Float32Array(n * x.numericNames.length);
  numeric.set(x.numeric);
  numeric.set(y.numeric, x.numeric.length);
  const labels = new Float32Array(n);
  labels.set(x.labels);
  labels.set(y.labels, x.rows);
  const out: ColumnarDataset = {
    rows: n,
    numericNames: x.numericNames,
    numeric,
    labels,
    slots: x.slots.map((s, k) => {
      const t = y.slots[k]!;
      const zx = s.offsets[x.rows]!;
      const offsets = new Int32Array(n + 1);
      offsets.set(s.offsets.subarray(0, x.rows + 1));
      for (let i = 1; i <= y.rows; i++) offsets[x.rows + i] = zx + t.offsets[i]!;
      const ids = new Int32Array(zx + t.offsets[y.rows]!);
      ids.set(s.ids.subarray(0, zx));
      ids.set(t.ids.subarray(0, t.offsets[y.rows]!), zx);
      return { name: s.name, ids, offsets };
    }),
  };
  if (x.weights && y.weights) {
    out.weights = new Float32Array(n);
    out.weights.set(x.weights);
    out.weights.set(y.weights, x.rows);
  }
  if (x.keys && y.keys)
    out.keys = Object.fromEntries(
      Object.entries(x.keys).map(([k, v]) => {
        const c = new Int32Array(n);
        c.set(v);
        c.set(y.keys![k]!, x.rows);
        return [k, c];
      }),
    );
  return out as T;
}

/** A spec naming every column of the data (gather copies all of them, in the data's own order). */
function allColumns(ds: RuntimeData): ModelSpec {
  return { numeric: ds.numericNames, slots: ds.slots.map((s) => ({ name: s.name })) } as unknown as ModelSpec;
}

/**
 * The rows `idx` (or all) of the data in memory: for columnar data with no `idx` the data itself,
 * otherwise a copy of just those rows (for shards read natively, off the event loop, with the pages
 * released behind; its memory is that of the rows asked for, not of the set).
 */
export async function materialize(ds: RuntimeData, idx?: ArrayLike<number>): Promise<ColumnarDataset> {
  if (!isShardDataset(ds)) {
    if (!idx) return ds;
    return selectRows(ds, idx);
  }
  const keyName = ds.keys[0];
  const native = toNativeData(allColumns(ds), ds, keyName);
  const rows = idx ? Int32Array.from(idx) : undefined;
  const g = await loadNativeAddon().gather(native, ds.numericNames.length, ds.slots.length, rows);
  const n = rows ? rows.length : ds.rows;
  const out: ColumnarDataset = {
    rows: n,
    numericNames: [...ds.numericNames],
    numeric: g.numeric,
    labels: g.labels,
    slots: ds.slots.map((s, k) => ({ name: s.name, offsets: g.offs[k]!, ids: g.ids[k]! })),
  };
  // no rows: no parts, so the native side cannot know these columns exist
  if (g.weights || (ds.hasWeights && n === 0)) out.weights = g.weights ?? new Float32Array(0);
  if (keyName !== undefined) out.keys = { [keyName]: g.key ?? new Int32Array(0) };
  if (ds.keys.length > 1) {
    // one key column per gather: the others one by one
    for (const k of ds.keys.slice(1)) {
      const more = await loadNativeAddon().gather(toNativeData(allColumns(ds), ds, k), 0, 0, rows);
      out.keys![k] = more.key ?? new Int32Array(0);
    }
  }
  return out;
}

/**
 * One slot's offsets and ids for every row of the data: the data's own arrays in memory; for shards,
 * that column alone gathered natively (its memory is that of the one column, not of the set).
 */
export async function slotOf(ds: RuntimeData, name: string): Promise<{ offsets: Int32Array; ids: Int32Array }> {
  const k = ds.slots.findIndex((s) => s.name === name);
  if (k < 0) throw new Error(`the data has no slot "${name}" (has: ${ds.slots.map((s) => s.name).join(', ') || 'none'})`);
  if (!isShardDataset(ds)) return { offsets: ds.slots[k]!.offsets, ids: ds.slots[k]!.ids };
  const spec = { numeric: [], slots: [{ name }] } as unknown as ModelSpec;
  const g = await loadNativeAddon().gather(toNativeData(spec, ds), 0, 1);
  return { offsets: g.offs[0]!, ids: g.ids[0]! };
}

/** The labels of the data (for shards gathered natively). */
export async function labelsOf(ds: RuntimeData): Promise<Float32Array> {
  if (!isShardDataset(ds)) return ds.labels;
  const spec = { numeric: [], slots: [] } as unknown as ModelSpec;
  return (await loadNativeAddon().gather(toNativeData(spec, ds), 0, 0)).labels;
}

/** Rows `idx` of columnar data, copied (in memory: no native round trip). */
export function selectRows(ds: ColumnarDataset, idx: ArrayLike<number>): ColumnarDataset {
  checkColumnar(ds);
  const n = idx.length;
  const w = ds.numericNames.length;
  const numeric = new Float32Array(n * w);
  const labels = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const r = idx[i]!;
    if (!(r >= 0 && r < ds.rows)) throw new Error(`materialize: row ${r} is outside the ${ds.rows} rows`);
    numeric.set(ds.numeric.subarray(r * w, r * w + w), i * w);
    labels[i] = ds.labels[r]!;
  }
  const slots = ds.slots.map((s) => {
    const offsets = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) offsets[i + 1] = offsets[i]! + (s.offsets[idx[i]! + 1]! - s.offsets[idx[i]!]!);
    const ids = new Int32Array(offsets[n]!);
    for (let i = 0; i < n; i++) ids.set(s.ids.subarray(s.offsets[idx[i]!]!, s.offsets[idx[i]! + 1]!), offsets[i]!);
    return { name: s.name, ids, offsets };
  });
  const out: ColumnarDataset = { rows: n, numericNames: ds.numericNames, numeric, slots, labels };
  if (ds.weights) out.weights = Float32Array.from({ length: n }, (_, i) => ds.weights![idx[i]!]!);
  if (ds.keys)
    out.keys = Object.fromEntries(
      Object.entries(ds.keys).map(([k, v]) => [k, Int32Array.from({ length: n }, (_, i) => v[idx[i]!]!)]),
    );
  return out;
}
