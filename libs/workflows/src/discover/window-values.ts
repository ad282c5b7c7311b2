import { durationSeconds, type FeatureExpr } from '@abacus/samples';

/**
 * The screen's values of point-in-time aggregates, computed from the raw columns of the training rows
 * instead of by the sample builder's window functions: per partition (the rows of a key, or of a key
 * and a category) the rows in time order, prefix sums of the label and of each number, and for every
 * row the first row of its time (rows of the same time are not read) and the first row inside the
 * window. An aggregate over a window is then a difference of two prefix sums: linear in the rows, where
 * DuckDB's window functions build a segment tree per column. The rule is the builder's (rows of the key
 * with a time in [t − w, t)); numbers read as the builder encodes them (a missing number is the train
 * mean). The verified comparison builds the candidates it is sent with the sample builder itself.
 */

/** A leaf's name among the raw inputs: a column's name, or @name for a feature joined from a feature table. */
export function leafName(e: FeatureExpr): string {
  if ('col' in e) return e.col;
  if ('ref' in e) return `@${e.ref}`;
  throw new Error('not a column or a feature-table feature');
}

/** The training rows' raw columns, in the training split's (time, row) order. */
export interface WindowRows {
  rows: number;
  /** seconds */
  time: Float64Array;
  /** 0 / 1 */
  label: Float32Array;
  /** a category or key column's ids (< 0: missing) */
  ids(column: string): Int32Array;
  /** a number column's values */
  values(column: string): Float32Array;
}

/** the aggregates computed here (distinct counts are left to the sample builder) */
export function windowFast(e: FeatureExpr): boolean {
  const x = e as { op?: string; agg?: string; by?: FeatureExpr[]; of?: FeatureExpr; arg?: FeatureExpr };
  const plain = (c: FeatureExpr | undefined) => !!c && ('col' in c || 'ref' in c);
  if (x.op === 'window') return x.agg !== 'distinct' && (x.by ?? []).every(plain) && (x.of === undefined || plain(x.of));
  if (x.op === 'since') return (x.by ?? []).every(plain);
  if (x.op === 'freq') return plain(x.arg);
  return false;
}

interface Partition {
  /** rows in (partition, time) order; rows with a missing key are left out */
  order: Uint32Array;
  /** per place in `order`: where its partition starts, and the first place of its time in it */
  start: Uint32Array;
  groupStart: Uint32Array;
  /** per row: its place in `order` (-1: a key is missing) */
  place: Int32Array;
}

/**
 * Aggregates of the window families at `at` (training-row positions, the screen rows), for candidates
 * whose expressions windowFast accepts. Partitions, prefix sums and window starts are computed once per
 * key set, number and window, and shared by the candidates that read them.
 */
export class WindowValues {
  private readonly partitions = new Map<string, Partition>();
  private readonly prefixes = new Map<string, Float64Array>();
  private readonly lows = new Map<string, Uint32Array>();

  constructor(
    private readonly rows: WindowRows,
    private readonly at: Uint32Array,
  ) {}

  /** Forgets every partition, window start and prefix sum computed so far (their memory is freed). */
  drop(): void {
    this.partitions.clear();
    this.prefixes.clear();
    this.lows.clear();
  }

  /** The candidate's value at each of `at` (NaN where missing, as the builder's NULL). */
  values(e: FeatureExpr): Float32Array {
    const x = e as { op: string; agg?: string; by?: FeatureExpr[]; of?: FeatureExpr; arg?: FeatureExpr; over?: string };
    const keys = x.op === 'freq' ? [leafName(x.arg!)] : x.by!.map(leafName);
    const p = this.partition(keys);
    const out = new Float32Array(this.at.length);
    const t = this.rows.time;
    if (x.op === 'since' || x.op === 'freq') {
      for (let k = 0; k < this.at.length; k++) {
        const q = p.place[this.at[k]];
        if (q < 0) out[k] = NaN;
        else {
          const g = p.groupStart[q];
          const s = p.start[q];
          // since: the time since the key's last earlier row; freq: the key's earlier rows
          out[k] = x.op === 'freq' ? g - s : g > s ? t[p.order[q]] - t[p.order[g - 1]] : NaN;
        }
      }
      return out;
    }
    const lo = this.low(keys, p, durationSeconds(x.over!));
    const agg = x.agg!;
    const sums = agg === 'count' ? null : this.prefix(keys, p, agg === 'rate' ? null : leafName(x.of!));
    for (let k = 0; k < this.at.length; k++) {
      const q = p.place[this.at[k]];
      if (q < 0) {
        out[k] = NaN;
        continue;
      }
      const g = p.groupStart[q];
      const l = lo[q];
      const n = g - l;
      if (agg === 'count') out[k] = n;
      else if (agg === 'sum') out[k] = sums![g] - sums![l];
      else out[k] = n > 0 ? (sums![g] - sums![l]) / n : NaN;
    }
    return out;
  }

  private partition(keys: string[]): Partition {
    const name = keys.join('\u0000');
    let p = this.partitions.get(name);
    if (p) return p;
    const n = this.rows.rows;
    // a dense code per combination of the keys' ids (-1: one is missing)
    let code = new Int32Array(n);
    let codes = 0;
    keys.forEach((key, j) => {
      const ids = this.rows.ids(key);
      const map = new Map<number, number>();
      const next = new Int32Array(n);
      let m = 0;
      for (let i = 0; i < n; i++) {
        if (ids[i] < 0 || (j > 0 && code[i] < 0)) {
          next[i] = -1;
          continue;
        }
        const v = j === 0 ? ids[i] : code[i] * 2 ** 31 + ids[i];
        let c = map.get(v);
        if (c === undefined) map.set(v, (c = m++));
        next[i] = c;
      }
      code = next;
      codes = m;
    });
    // a counting sort by code keeps each partition's rows in time order (the rows come in it)
    const count = new Uint32Array(codes + 1);
    for (let i = 0; i < n; i++) if (code[i] >= 0) count[code[i] + 1]++;
    for (let c = 0; c < codes; c++) count[c + 1] += count[c];
    const begin = count.slice(0, codes);
    const kept = codes ? count[codes] : 0;
    const order = new Uint32Array(kept);
    const place = new Int32Array(n).fill(-1);
    const fill = count.slice(0, codes);
    for (let i = 0; i < n; i++) {
      const c = code[i];
      if (c < 0) continue;
      const q = fill[c]++;
      order[q] = i;
      place[i] = q;
    }
    const start = new Uint32Array(kept);
    const groupStart = new Uint32Array(kept);
    const t = this.rows.time;
    for (let c = 0; c < codes; c++) {
      const s = begin[c];
      const e = c + 1 < codes ? begin[c + 1] : kept;
      for (let q = s; q < e; q++) {
        start[q] = s;
        groupStart[q] = q > s && t[order[q - 1]] === t[order[q]] ? groupStart[q - 1] : q;
      }
    }
    p = { order, start, groupStart, place };
    this.partitions.set(name, p);
    return p;
  }

  /** per place: the first place of its partition with a time at or after its time less `w` */
  private low(keys: string[], p: Partition, w: number): Uint32Array {
    const name = `${keys.join('\u0000')}\u0001${w}`;
    let lo = this.lows.get(name);
    if (lo) return lo;
    const t = this.rows.time;
    lo = new Uint32Array(p.order.length);
    let l = 0;
    for (let q = 0; q < p.order.length; q++) {
      if (q === p.start[q]) l = q;
      const from = t[p.order[q]] - w;
      while (t[p.order[l]] < from) l++;
      lo[q] = l;
    }
    this.lows.set(name, lo);
    return lo;
  }

  /** prefix sums in partition order of a number (null: the label); [q] = sum over places before q */
  private prefix(keys: string[], p: Partition, column: string | null): Float64Array {
    const name = `${keys.join('\u0000')}\u0001${column ?? ''}`;
    let s = this.prefixes.get(name);
    if (s) return s;
    const v = column === null ? this.rows.label : this.rows.values(column);
    s = new Float64Array(p.order.length + 1);
    // partitions are contiguous, and every sum is a difference within one: one running sum will do
    for (let q = 0; q < p.order.length; q++) s[q + 1] = s[q] + v[p.order[q]];
    this.prefixes.set(name, s);
    return s;
  }
}
