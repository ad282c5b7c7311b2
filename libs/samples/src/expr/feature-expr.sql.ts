import { durationSeconds, type FeatureExpr } from './feature-expr.schema';
import type { CheckedExpr, ColumnClass, ExprKind } from './feature-expr.check';

/** How the compiled SQL reaches the set's rows. */
export interface ExprSqlContext {
  /** SQL of a raw column of the current row (e.g. s."price") */
  column(name: string): string;
  classOf(name: string): ColumnClass;
  /** SQL of the row's time in epoch seconds (a DOUBLE), null where the set has none */
  time: string | null;
  /** SQL of the row's label as 1.0 / 0.0 */
  label: string;
  /** SQL of the row's unique number (orders rows of one time) */
  rowId: string;
  /** SQL of a feature-table feature's value as of the row's time (its join is the caller's) */
  joined?(feature: string): string;
  /**
   * Adds a column computed over the same rows one query level below (a window over a window cannot be
   * written in one SELECT) and returns how the expression refers to it.
   */
  inner(sql: string): string;
  /**
   * seconds before the row's time where a distinct count's frame ends (its window cannot leave out the
   * row's own time any other way at speed): rows closer than this to the impression are not counted.
   * Default 0.001; set it above the time values' rounding (timeEpsilon).
   */
  epsilon?: number;
}

/** A frame end that excludes the row's own time for times up to `maxAbsTime` (16 steps of a double there, at least 1 ms). */
export function timeEpsilon(maxAbsTime: number): number {
  return Math.max(0.001, Math.abs(maxAbsTime) * 2 ** -44);
}

/** An expression as the sample builder reads it: a column of SQL and how it is encoded. */
export interface CompiledExpr {
  sql: string;
  kind: ExprKind;
  /** a cross: its value is hashed into this many buckets; a bucketize: its boundaries (the builder's own transforms) */
  transform?: { type: 'hash'; hashBuckets: number } | { type: 'buckets'; boundaries: number[] };
  /** window functions in the SQL (each reads earlier rows of its key) */
  windows: number;
}

const num = (v: number) => (Number.isInteger(v) ? `${v}.0` : String(v));
/** the separator of a cross's parts (unit separator: not in ordinary text) */
export const CROSS_SEPARATOR = '\u001f';

/**
 * SQL for a checked expression. Every aggregate is a window function over the rows of its key ordered
 * by time whose frame ends at the current row and EXCLUDEs its GROUP (the rows of the same time, the
 * row itself among them), so it reads rows strictly before the impression's time; `last` orders by
 * (time, row) and reads them at the first row of each time. A row whose key is missing gets a missing value.
 */
export function compileExpr(checked: CheckedExpr, ctx: ExprSqlContext): CompiledExpr {
  let windows = 0;
  const time = (): string => {
    if (!ctx.time) throw new Error('an aggregate needs the set time column');
    return ctx.time;
  };
  const joined = (name: string): string => {
    if (!ctx.joined) throw new Error(`feature '${name}' is joined from a feature table, and this build joins none`);
    return ctx.joined(name);
  };
  const numeric = (e: FeatureExpr): string => {
    if ('num' in e) return num(e.num);
    if ('ref' in e) return `CAST(${joined(e.ref)} AS DOUBLE)`;
    if ('col' in e) {
      const cls = ctx.classOf(e.col);
      return cls === 'time' ? `CAST(epoch(${ctx.column(e.col)}) AS DOUBLE)` : `CAST(${ctx.column(e.col)} AS DOUBLE)`;
    }
    if (!('op' in e)) throw new Error('unexpanded reference');
    switch (e.op) {
      case 'add':
        return `(${numeric(e.args[0])} + ${numeric(e.args[1])})`;
      case 'sub':
        return `(${numeric(e.args[0])} - ${numeric(e.args[1])})`;
      case 'mul':
        return `(${numeric(e.args[0])} * ${numeric(e.args[1])})`;
      case 'div':
        // safe division: missing where the divisor is 0 (or missing)
        return `(${numeric(e.args[0])} / nullif(${numeric(e.args[1])}, 0.0))`;
      case 'log': {
        const x = numeric(e.arg);
        return `(CASE WHEN ${x} > -1.0 THEN ln(1.0 + ${x}) END)`;
      }
      case 'clip': {
        let x = numeric(e.arg);
        if (e.min !== undefined) x = `greatest(${x}, ${num(e.min)})`;
        if (e.max !== undefined) x = `least(${x}, ${num(e.max)})`;
        return x;
      }
      case 'freq':
        return aggregate('count(*)', [e.arg], 'RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW');
      case 'window': {
        const frame = `RANGE BETWEEN ${num(durationSeconds(e.over))} PRECEDING AND CURRENT ROW`;
        switch (e.agg) {
          case 'count':
            return aggregate('count(*)', e.by, frame);
          case 'rate':
            return aggregate(`avg(${ctx.label})`, e.by, frame);
          case 'sum':
            return aggregate(`sum(${numeric(e.of!)})`, e.by, frame, true, true, (x) => `coalesce(${x}, 0.0)`);
          case 'mean':
            return aggregate(`avg(${numeric(e.of!)})`, e.by, frame);
          case 'distinct': {
            // count(DISTINCT) with EXCLUDE GROUP is orders of magnitude slower in DuckDB than a frame that
            // ends epsilon before the row's time
            const eps = ctx.epsilon ?? 0.001;
            return aggregate(
              `count(DISTINCT ${key(e.of!)})`,
              e.by,
              `RANGE BETWEEN ${num(durationSeconds(e.over))} PRECEDING AND ${num(eps)} PRECEDING`,
              false,
              false,
            );
          }
        }
        break;
      }
      case 'since':
        return `(${time()} - ${aggregate(`max(${time()})`, e.by, 'RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW')})`;
    }
    throw new Error(`${'op' in e ? e.op : 'node'} is not a number`);
  };
  // a window function over the rows of the keys strictly before this row's time, missing where a key is
  const aggregate = (
    fn: string,
    by: FeatureExpr[],
    frame: string,
    nullable = false,
    exclude = true,
    wrap = (x: string) => x,
  ): string => {
    windows++;
    const keys = by.map(key);
    const over = `${fn} OVER (PARTITION BY ${keys.join(', ')} ORDER BY ${time()} ${frame}${exclude ? ' EXCLUDE GROUP' : ''})`;
    const cast = nullable || !fn.startsWith('count') ? over : `CAST(${over} AS DOUBLE)`;
    return `(CASE WHEN ${keys.map((k) => `${k} IS NULL`).join(' OR ')} THEN NULL ELSE ${wrap(cast)} END)`;
  };
  // a categorical value as a key: a column as it is (no cast: partitions compare its own type)
  const key = (e: FeatureExpr): string => ('col' in e ? ctx.column(e.col) : 'ref' in e ? joined(e.ref) : categorical(e));
  const categorical = (e: FeatureExpr): string => {
    if ('col' in e) return `CAST(${ctx.column(e.col)} AS VARCHAR)`;
    if ('ref' in e) return `CAST(${joined(e.ref)} AS VARCHAR)`;
    if (!('op' in e)) throw new Error('not a categorical value');
    if (e.op === 'bucketize') {
      const x = numeric(e.arg);
      return `(CASE WHEN ${x} IS NULL OR isnan(${x}) THEN NULL ELSE CAST(${e.boundaries.map((b) => `(${x} >= ${num(b)})::INTEGER`).join(' + ')} AS VARCHAR) END)`;
    }
    if (e.op === 'cross') {
      const parts = e.args.map(categorical);
      return `(CASE WHEN ${parts.map((p) => `${p} IS NULL`).join(' OR ')} THEN NULL ELSE concat_ws(chr(31), ${parts.join(', ')}) END)`;
    }
    throw new Error(`${e.op} is not categorical`);
  };
  const e = checked.expr;
  if (checked.kind === 'multi_id') {
    if (!('op' in e) || e.op !== 'last') {
      if ('col' in e) return { sql: ctx.column(e.col), kind: 'multi_id', windows };
      if ('ref' in e) return { sql: joined(e.ref), kind: 'multi_id', windows };
      throw new Error('a list of ids comes from last() or a list column');
    }
    windows++;
    // the n rows before the first row of this row's (keys, time) group in (time, row) order: rows of
    // earlier times only, however many share this row's time
    const keys = e.by.map(key);
    const t = time();
    const before = ctx.inner(
      `list(${categorical(e.of)}) OVER (PARTITION BY ${keys.join(', ')} ORDER BY ${t}, ${ctx.rowId} ROWS BETWEEN ${e.n} PRECEDING AND 1 PRECEDING)`,
    );
    const first = `first_value(${before}) OVER (PARTITION BY ${keys.join(', ')}, ${t} ORDER BY ${ctx.rowId} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)`;
    const sql = `(CASE WHEN ${keys.map((k) => `${k} IS NULL`).join(' OR ')} THEN NULL ELSE coalesce(list_filter(${first}, x -> x IS NOT NULL), []::VARCHAR[]) END)`;
    return { sql, kind: 'multi_id', windows };
  }
  if (checked.kind === 'categorical') {
    // at the root a cross is hashed and a bucketize bucketed by the builder's own encoders (their id spaces)
    if ('op' in e && e.op === 'bucketize') {
      const sql = numeric(e.arg);
      return { sql, kind: 'categorical', transform: { type: 'buckets', boundaries: [...e.boundaries] }, windows };
    }
    const sql = categorical(e);
    return 'op' in e && e.op === 'cross'
      ? { sql, kind: 'categorical', transform: { type: 'hash', hashBuckets: e.buckets }, windows }
      : { sql, kind: 'categorical', windows };
  }
  return { sql: numeric(e), kind: 'numeric', windows };
}
