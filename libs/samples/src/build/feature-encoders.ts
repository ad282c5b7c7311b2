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

/**
 * How one feature's column of the joined table becomes model input, everything global already known
 * (the train mean, the train dictionary, the vocabulary): so any range of rows is encoded on its own,
 * on any thread, and the ranges put together are the whole set's encoding. Plain data (posted to threads).
 */
export type ColumnPlan =
  /** missing (NULL, NaN, ±Infinity) → `fill`, the train mean (after the log) */
  | { input: 'numeric'; log: boolean; fill: number }
  /** id = number of boundaries <= x, NaN → -1 */
  | { input: 'slot'; encode: 'buckets'; boundaries: number[] }
  /** train dictionary (id = 1 + rank, values sorted; unseen → 0) or hash buckets; missing → -1 */
  | {
      input: 'slot';
      encode: 'categorical';
      reader: 'double' | 'string';
      hash: number | null;
      dictionary: (string | number)[] | null;
      /** the column already holds the ids (looked up by DuckDB in the dictionary: 1 + rank, unseen 0, missing -1) */
      codes?: boolean;
    }
  /** CSR lists: integer ids as given, a string train dictionary, or hash buckets */
  | {
      input: 'slot';
      encode: 'multi';
      child: 'int' | 'double' | 'string';
      hash: number | null;
      dictionary: string[] | null;
      field: string;
    };

/** The raw Float64Array behind a DOUBLE vector (SQL made it NULL-free: NaN = missing), or null. */
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

const isMissing = (x: number): boolean => !Number.isFinite(x);

/** Growable CSR ids of one split. */
class IdBuffer {
  ids = new Int32Array(1 << 12);
  length = 0;
  reserve(extra: number): void {
    if (this.length + extra <= this.ids.length) return;
    const grown = new Int32Array(Math.max(this.ids.length * 2, this.length + extra));
    grown.set(this.ids.subarray(0, this.length));
    this.ids = grown;
  }
}

const MAX_ID = 2 ** 31;

/** One split's output of a feature within a range. */
export interface SplitSink {
  /** numeric: rows x width, row-major, the feature at column `col` */
  numeric: Float32Array;
  width: number;
  col: number;
  single: Int32Array | null;
  offsets: Int32Array | null;
  ids: IdBuffer | null;
  /**
   * rows that come in any order (each to its `dest`): a list's first id in `ids` by row, and `offsets`
   * holds the lists' lengths until slot() lays them out in row order
   */
  starts: Int32Array | null;
}

/**
 * Encodes chunks of one feature into the train and test sinks of a range. `dest[i]` is the row's
 * index within its split, `test[i]` whether it is a test row. Counts the missing values.
 */
export class ColumnEncoder {
  missing = 0;
  private readonly dict: Map<string | number, number> | null;
  private readonly bounds: Float64Array | null;
  private scratch = new Float64Array(2048);

  constructor(
    readonly plan: ColumnPlan,
    readonly sinks: [SplitSink, SplitSink],
  ) {
    const values = plan.input === 'slot' && plan.encode !== 'buckets' ? plan.dictionary : null;
    this.dict = values ? new Map(values.map((v, k) => [v, k + 1])) : null;
    this.bounds = plan.input === 'slot' && plan.encode === 'buckets' ? Float64Array.from(plan.boundaries) : null;
  }

  static sinks(
    plan: ColumnPlan,
    rows: [number, number],
    numeric: [Float32Array, Float32Array],
    width: number,
    col: number,
    scattered = false,
  ): [SplitSink, SplitSink] {
    const make = (s: 0 | 1): SplitSink => {
      const multi = plan.input === 'slot' && plan.encode === 'multi';
      return {
        numeric: numeric[s],
        width,
        col,
        single: plan.input === 'slot' && !multi ? new Int32Array(rows[s]) : null,
        offsets: multi ? new Int32Array(rows[s] + 1) : null,
        ids: multi ? new IdBuffer() : null,
        starts: multi && scattered ? new Int32Array(rows[s]) : null,
      };
    };
    return [make(0), make(1)];
  }

  private doubles(v: DuckDBVector, n: number): Float64Array {
    if (this.scratch.length < n) this.scratch = new Float64Array(n);
    readDoubles(v, n, this.scratch, 0);
    return this.scratch;
  }

  read(v: DuckDBVector, n: number, test: Uint8Array, dest: Int32Array): void {
    const p = this.plan;
    if (p.input === 'numeric') {
      const x = this.doubles(v, n);
      for (let i = 0; i < n; i++) {
        let value = x[i];
        if (p.log) value = value >= 0 ? Math.log1p(value) : -Math.log1p(-value);
        if (isMissing(value)) {
          this.missing++;
          value = p.fill;
        }
        const s = this.sinks[test[i]];
        s.numeric[dest[i] * s.width + s.col] = value;
      }
      return;
    }
    if (p.encode === 'buckets') {
      const x = this.doubles(v, n);
      const b = this.bounds!;
      for (let i = 0; i < n; i++) {
        const value = x[i];
        let id: number;
        if (Number.isNaN(value)) {
          id = -1;
          this.missing++;
        } else {
          let lo = 0;
          let hi = b.length;
          while (lo < hi) {
            const mid = (lo + hi) >> 1;
            if (b[mid] <= value) lo = mid + 1;
            else hi = mid;
          }
          id = lo;
        }
        this.sinks[test[i]].single![dest[i]] = id;
      }
      return;
    }
    if (p.encode === 'categorical' && p.codes) {
      const ids = int32Items(v, n);
      const single0 = this.sinks[0].single!;
      const single1 = this.sinks[1].single!;
      for (let i = 0; i < n; i++) {
        const id = ids ? ids[i] : Number(v.getItem(i));
        if (id === -1) this.missing++;
        (test[i] ? single1 : single0)[dest[i]] = id;
      }
      return;
    }
    if (p.encode === 'categorical') {
      const x = p.reader === 'double' ? this.doubles(v, n) : null;
      for (let i = 0; i < n; i++) {
        const value: string | number | null = x ? (Number.isNaN(x[i]) ? null : x[i]) : (v.getItem(i) as string | null);
        let id: number;
        if (value === null) {
          id = -1;
          this.missing++;
        } else id = p.hash !== null ? hashBucket(value, p.hash) : (this.dict!.get(value) ?? 0);
        this.sinks[test[i]].single![dest[i]] = id;
      }
      return;
    }
    // multi-id lists (SQL removed NULL lists, NULL and negative elements)
    const list = v as DuckDBListVector;
    const childVector = list.childVector;
    const childCount = childVector.itemCount;
    const ints = p.child === 'int' ? int32Items(childVector, childCount) : null;
    const doubles = p.child === 'double' ? doubleItems(childVector, childCount) : null;
    for (let i = 0; i < n; i++) {
      const start = list.getEntryOffset(i);
      const len = list.getEntryLength(i);
      if (len === 0) this.missing++;
      const s = this.sinks[test[i]];
      const buf = s.ids!;
      buf.reserve(len);
      const ids = buf.ids;
      const begin = buf.length;
      let at = begin;
      for (let k = start; k < start + len; k++) {
        if (p.child === 'string') {
          const str = childVector.getItem(k) as string;
          ids[at++] = p.hash !== null ? hashBucket(str, p.hash) : (this.dict!.get(str) ?? 0);
          continue;
        }
        const id = ints ? ints[k] : doubles ? doubles[k] : Number(childVector.getItem(k));
        if (p.hash !== null) ids[at++] = hashBucket(id, p.hash);
        else {
          if (!(id < MAX_ID) || !Number.isInteger(id)) {
            throw new SampleBuildError(p.field, `multi-id value ${id} is outside [0, 2^31): use a hash transform`);
          }
          ids[at++] = id;
        }
      }
      buf.length = at;
      if (s.starts) {
        s.starts[dest[i]] = begin;
        s.offsets![dest[i] + 1] = at - begin;
      } else s.offsets![dest[i] + 1] = at;
    }
  }

  /** the slot columns of split s (0 train, 1 test) once every row is read */
  slot(s: 0 | 1): { ids: Int32Array; offsets: Int32Array } {
    const sink = this.sinks[s];
    if (sink.single) {
      const r = sink.single.length;
      const offsets = new Int32Array(r + 1);
      for (let i = 0; i < r; i++) offsets[i + 1] = i + 1;
      return { ids: sink.single, offsets };
    }
    if (sink.starts) {
      // rows came in any order: lengths by row → offsets, and the lists gathered in row order
      const lens = sink.offsets!;
      const r = lens.length - 1;
      const offsets = new Int32Array(r + 1);
      for (let i = 0; i < r; i++) offsets[i + 1] = offsets[i] + lens[i + 1];
      const ids = new Int32Array(offsets[r]);
      const from = sink.ids!.ids;
      for (let i = 0; i < r; i++) ids.set(from.subarray(sink.starts[i], sink.starts[i] + lens[i + 1]), offsets[i]);
      return { ids, offsets };
    }
    return { ids: sink.ids!.ids.slice(0, sink.ids!.length), offsets: sink.offsets! };
  }
}
