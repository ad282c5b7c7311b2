import type { DuckDBListVector, DuckDBVector } from '@duckdb/node-api';
import { hashBucket } from './feature-hash';
import { SampleBuildError } from './sample-build.error';

/**
 * What the ids of a slot stand for, so that embeddings learned on one built set can be carried to another:
 * `dictionary`: id k ≥ 1 is values[k - 1] (0 = out of vocabulary); `identity`: the id is the integer value
 * itself; `hash`: fnv1a32(String(value)) mod buckets; `buckets`: id k is the k-th interval of the boundaries.
 */
export type SlotIdSpace =
  | { kind: 'dictionary'; values: (string | number)[] }
  | { kind: 'identity' }
  | { kind: 'hash'; buckets: number }
  | { kind: 'buckets'; boundaries: number[] };

/** One feature over all built rows (train + test, in build order), before the split into EncodedSplits. */
export type EncodedColumn =
  | { input: 'numeric'; values: Float64Array; missing: number }
  /** one id per row (-1 = padding) */
  | { input: 'slot'; single: Int32Array; vocab: number; missing: number; idSpace: SlotIdSpace }
  /** CSR */
  | { input: 'slot'; offsets: Int32Array; ids: Int32Array; vocab: number; missing: number; idSpace: SlotIdSpace };

/**
 * Consumes the chunk column of one feature. `test[r]` is already set for every row r < row + n when `read`
 * runs, so dictionaries can tell train rows from test rows.
 */
export interface FeatureEncoder {
  read(vector: DuckDBVector, row: number, n: number, test: Uint8Array): void;
  finish(test: Uint8Array): EncodedColumn;
}

/**
 * The raw Float64Array behind a DOUBLE vector (SQL made it NULL-free: NaN = missing), or null when this
 * node-api version does not expose it (then values are read one by one).
 */
function doubleItems(v: DuckDBVector, n: number): Float64Array | null {
  const items = (v as unknown as { items?: unknown }).items;
  return items instanceof Float64Array && items.length >= n ? items : null;
}

function int32Items(v: DuckDBVector, n: number): Int32Array | null {
  const items = (v as unknown as { items?: unknown }).items;
  return items instanceof Int32Array && items.length >= n ? items : null;
}

/** copies n doubles of a chunk column into out[at ..] (null → NaN) */
export function readDoubles(v: DuckDBVector, n: number, out: Float64Array, at: number): void {
  const items = doubleItems(v, n);
  if (items) {
    out.set(items.subarray(0, n), at);
    return;
  }
  for (let i = 0; i < n; i++) {
    const x = v.getItem(i);
    out[at + i] = typeof x === 'number' ? x : x === null ? NaN : Number(x);
  }
}

const scratch = { buf: new Float64Array(4096) };
function chunkDoubles(v: DuckDBVector, n: number): Float64Array {
  if (scratch.buf.length < n) scratch.buf = new Float64Array(n);
  readDoubles(v, n, scratch.buf, 0);
  return scratch.buf;
}

const isMissing = (x: number): boolean => !Number.isFinite(x);

/** numeric: optional log; missing (NULL, NaN, ±Infinity) → train mean */
export function numericEncoder(rows: number, log: boolean): FeatureEncoder {
  const values = new Float64Array(rows);
  return {
    read(v, row, n) {
      readDoubles(v, n, values, row);
      if (log) {
        for (let i = row; i < row + n; i++) {
          const x = values[i];
          values[i] = x >= 0 ? Math.log1p(x) : -Math.log1p(-x);
        }
      }
    },
    finish(test) {
      let sum = 0;
      let count = 0;
      let missing = 0;
      for (let r = 0; r < rows; r++) {
        const x = values[r];
        if (isMissing(x)) missing++;
        else if (test[r] === 0) {
          sum += x;
          count++;
        }
      }
      const mean = count > 0 ? sum / count : 0;
      if (missing > 0) for (let r = 0; r < rows; r++) if (isMissing(values[r])) values[r] = mean;
      return { input: 'numeric', values, missing };
    },
  };
}

/** numeric → slot: id = number of boundaries <= x, missing → -1 */
export function bucketEncoder(rows: number, boundaries: readonly number[]): FeatureEncoder {
  const single = new Int32Array(rows);
  const b = Float64Array.from(boundaries);
  let missing = 0;
  return {
    read(v, row, n) {
      const x = chunkDoubles(v, n);
      for (let i = 0; i < n; i++) {
        const value = x[i];
        if (Number.isNaN(value)) {
          single[row + i] = -1;
          missing++;
          continue;
        }
        let lo = 0;
        let hi = b.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (b[mid] <= value) lo = mid + 1;
          else hi = mid;
        }
        single[row + i] = lo;
      }
    },
    finish: () => ({
      input: 'slot',
      single,
      vocab: b.length + 1,
      missing,
      idSpace: { kind: 'buckets', boundaries: [...boundaries] },
    }),
  };
}

type Scalar = string | number;

/** compares dictionary values: numbers numerically, strings by UTF-16 code units (or as integers when `numericStrings`) */
function valueOrder(numericStrings: boolean): (a: Scalar, b: Scalar) => number {
  if (numericStrings) {
    return (a, b) => {
      const x = BigInt(a);
      const y = BigInt(b);
      return x < y ? -1 : x > y ? 1 : 0;
    };
  }
  return (a, b) => (typeof a === 'number' && typeof b === 'number' ? a - b : a < b ? -1 : a > b ? 1 : 0);
}

/**
 * Dictionary of values seen in rows: provisional codes in first-appearance order, then `remap` sends each code to
 * 1 + rank among the values seen in TRAIN rows (sorted), or 0 (out of vocabulary) when only test rows have it.
 */
class TrainDictionary {
  private readonly index = new Map<Scalar, number>();
  private readonly values: Scalar[] = [];
  private inTrain = new Uint8Array(1024);

  code(value: Scalar, isTrain: boolean): number {
    let c = this.index.get(value);
    if (c === undefined) {
      c = this.values.length;
      this.values.push(value);
      this.index.set(value, c);
      if (c >= this.inTrain.length) {
        const grown = new Uint8Array(this.inTrain.length * 2);
        grown.set(this.inTrain);
        this.inTrain = grown;
      }
    }
    if (isTrain) this.inTrain[c] = 1;
    return c;
  }

  /** code → final id; size = number of train values (vocab = size + 1) */
  remap(numericStrings: boolean): { map: Int32Array; size: number; idSpace: SlotIdSpace } {
    const trainCodes: number[] = [];
    for (let c = 0; c < this.values.length; c++) if (this.inTrain[c]) trainCodes.push(c);
    const order = valueOrder(numericStrings);
    trainCodes.sort((a, b) => order(this.values[a], this.values[b]));
    const map = new Int32Array(this.values.length); // 0 = OOV
    trainCodes.forEach((c, rank) => (map[c] = rank + 1));
    return {
      map,
      size: trainCodes.length,
      idSpace: { kind: 'dictionary', values: trainCodes.map((c) => this.values[c] as string | number) },
    };
  }
}

/** categorical values of a chunk column: numbers (DOUBLE, NaN = missing) or strings (null = missing) */
function scalarReader(reader: 'double' | 'string'): (v: DuckDBVector, n: number) => (i: number) => Scalar | null {
  if (reader === 'double') {
    return (v, n) => {
      const x = chunkDoubles(v, n);
      return (i) => (Number.isNaN(x[i]) ? null : x[i]);
    };
  }
  return (v) => (i) => v.getItem(i) as string | null;
}

/** categorical: train dictionary (sorted), OOV → 0, missing → -1; or hash buckets */
export function categoricalEncoder(
  rows: number,
  reader: 'double' | 'string',
  hashBuckets: number | null,
  numericStrings: boolean,
): FeatureEncoder {
  const single = new Int32Array(rows);
  const dict = new TrainDictionary();
  const scalars = scalarReader(reader);
  let missing = 0;
  return {
    read(v, row, n, test) {
      const get = scalars(v, n);
      for (let i = 0; i < n; i++) {
        const value = get(i);
        if (value === null) {
          single[row + i] = -1;
          missing++;
        } else single[row + i] = hashBuckets !== null ? hashBucket(value, hashBuckets) : dict.code(value, test[row + i] === 0);
      }
    },
    finish() {
      if (hashBuckets !== null)
        return { input: 'slot', single, vocab: hashBuckets, missing, idSpace: { kind: 'hash', buckets: hashBuckets } };
      const { map, size, idSpace } = dict.remap(numericStrings);
      for (let r = 0; r < rows; r++) if (single[r] >= 0) single[r] = map[single[r]];
      return { input: 'slot', single, vocab: size + 1, missing, idSpace };
    },
  };
}

class IdBuffer {
  ids = new Int32Array(1 << 16);
  length = 0;
  reserve(extra: number): void {
    if (this.length + extra <= this.ids.length) return;
    const grown = new Int32Array(Math.max(this.ids.length * 2, this.length + extra));
    grown.set(this.ids.subarray(0, this.length));
    this.ids = grown;
  }
}

const MAX_ID = 2 ** 31;

/**
 * multi-id lists (SQL removed NULL lists, NULL and negative elements). Integer children: ids as given (vocab =
 * max id + 1), or hashed by decimal string. String children: train dictionary like categorical, or hashed.
 */
export function multiIdEncoder(
  rows: number,
  child: 'int' | 'double' | 'string',
  hashBuckets: number | null,
  field: string,
): FeatureEncoder {
  const offsets = new Int32Array(rows + 1);
  const buf = new IdBuffer();
  const dict = new TrainDictionary();
  let maxId = -1;
  let missing = 0;
  return {
    read(v, row, n, test) {
      const list = v as DuckDBListVector;
      const childVector = list.childVector;
      const childCount = childVector.itemCount;
      const ints = child === 'int' ? int32Items(childVector, childCount) : null;
      const doubles = child === 'double' ? doubleItems(childVector, childCount) : null;
      for (let i = 0; i < n; i++) {
        const start = list.getEntryOffset(i);
        const len = list.getEntryLength(i);
        const r = row + i;
        if (len === 0) missing++;
        buf.reserve(len);
        const ids = buf.ids;
        let at = buf.length;
        for (let k = start; k < start + len; k++) {
          if (child === 'string') {
            const s = childVector.getItem(k) as string;
            ids[at++] = hashBuckets !== null ? hashBucket(s, hashBuckets) : dict.code(s, test[r] === 0);
            continue;
          }
          const id = ints ? ints[k] : doubles ? doubles[k] : Number(childVector.getItem(k));
          if (hashBuckets !== null) ids[at++] = hashBucket(id, hashBuckets);
          else {
            if (!(id < MAX_ID) || !Number.isInteger(id)) {
              throw new SampleBuildError(field, `multi-id value ${id} is outside [0, 2^31): use a hash transform`);
            }
            if (id > maxId) maxId = id;
            ids[at++] = id;
          }
        }
        buf.length = at;
        offsets[r + 1] = at;
      }
    },
    finish() {
      const ids = buf.ids.slice(0, buf.length);
      if (hashBuckets !== null)
        return { input: 'slot', offsets, ids, vocab: hashBuckets, missing, idSpace: { kind: 'hash', buckets: hashBuckets } };
      if (child === 'string') {
        const { map, size, idSpace } = dict.remap(false);
        for (let k = 0; k < ids.length; k++) ids[k] = map[ids[k]];
        return { input: 'slot', offsets, ids, vocab: size + 1, missing, idSpace };
      }
      return { input: 'slot', offsets, ids, vocab: maxId + 1 > 0 ? maxId + 1 : 1, missing, idSpace: { kind: 'identity' } };
    },
  };
}
