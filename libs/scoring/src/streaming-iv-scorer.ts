import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance, type DuckDBValue } from '@duckdb/node-api';
import { asTableReadError, planTableRead, quoteIdent, quoteLiteral, tableSource, type ColumnRead } from '@abacus/samples';
import {
  categoricalCountsSql,
  idPairCountsSql,
  numericBinsSql,
  ranksByDistinctSql,
  ranksBySortSql,
  sqlDouble,
  withoutNaN,
} from './binning.queries';
import { categoricalBinsFromCounts } from './categorical-binning';
import type { FeatureScore, IvReport } from './iv-report.types';
import {
  checkBothClasses,
  checkSplit,
  columnFinder,
  featureScore,
  featureSkip,
  ivReport,
  parseScoreOptions,
  parseTestFrom,
  timeKindError,
} from './iv-scorer';
import { checkLabelNulls, listLabelError, positiveClass } from './label-encoder';
import { IdPairCounts, countOnMultiIdBins, multiIdBinsFromCounts } from './multi-id-binning';
import { cutRanks, mergeNumericBins, numericCuts } from './numeric-binning';
import type { ParsedScoreTableOptions, ScoreTableOptions } from './score-table-options.schema';
import { ScoringError } from './scoring.error';

/** DuckDB's budget for one streaming scoring pass. */
export interface DuckdbLimits {
  /** memory_limit in MiB; past it DuckDB spills to `tempDir` */
  memoryLimitMb: number;
  /** where DuckDB spills (a fresh folder under it, removed afterwards); default the system's temporary directory */
  tempDir?: string;
  /** DuckDB's threads; default one per core */
  threads?: number;
}

export const DEFAULT_DUCKDB_MEMORY_MB = 1024;

export interface StreamScoreOptions extends Partial<DuckdbLimits> {
  /** the columns to read, as readTable's `columns` (default: every readable column) */
  columns?: string[];
  /** after the first pass (label, split, counts): how long opening and that pass took */
  onRead?: (readMs: number) => void | Promise<void>;
  /** after each feature column */
  onColumn?: (done: number, of: number) => void | Promise<void>;
  /**
   * numeric cut points by counting distinct values ('distinct') or by numbering the sorted values
   * ('rank'); both give the same cuts. 'auto': 'distinct' when values repeat 4 times or more on average
   */
  cutStrategy?: 'auto' | 'distinct' | 'rank';
}

export interface StreamedScore {
  report: IvReport;
  rows: number;
  /** opening the file and the first pass */
  readMs: number;
  /** the passes per feature column */
  scoreMs: number;
}

/**
 * The report scoreTableAsync(readTable(file, { columns }), options) gives, computed by DuckDB within a
 * memory cap instead of from columns held in memory: per numeric column the pre-binning cut points by
 * a sort in SQL and the rows per pre-bin by a GROUP BY, per categorical or multi-id column the rows per
 * value (per id and list length); the merging then runs on those counts through the same code as the
 * in-memory path. Memory grows with the columns' cardinality, never with the row count (DuckDB spills
 * what does not fit). The same errors, in the same order, as the in-memory path.
 */
export async function scoreFileStreaming(
  file: string,
  options: ScoreTableOptions,
  stream: StreamScoreOptions = {},
): Promise<StreamedScore> {
  const t0 = Date.now();
  const memoryLimitMb = stream.memoryLimitMb ?? DEFAULT_DUCKDB_MEMORY_MB;
  if (!(memoryLimitMb >= 1)) throw new ScoringError(`memory limit must be at least 1 MiB (got ${memoryLimitMb})`);
  const initial = await tableSource(file);
  const parent = stream.tempDir ?? os.tmpdir();
  await mkdir(parent, { recursive: true });
  const work = await mkdtemp(path.join(parent, 'abacus-score-'));
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  // DuckDB's failures while reading are the file's (as readTable says), except running out of the cap
  const query = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      if (err instanceof ScoringError) throw err;
      const msg = err instanceof Error ? err.message : String(err);
      if (/^Out of Memory Error/i.test(msg))
        throw new ScoringError(
          `DuckDB needed more than its memory cap of ${memoryLimitMb} MiB: ${msg.replace(/^Out of Memory Error:\s*/i, '').split('\n')[0]}`,
        );
      throw asTableReadError(file, err);
    }
  };
  const each = (sql: string, row: (r: DuckDBValue[]) => void) =>
    query(async () => {
      const result = await con.stream(sql);
      for (;;) {
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        for (const r of chunk.getRows()) row(r);
      }
    });
  try {
    await con.run(`SET memory_limit = '${Math.floor(memoryLimitMb)}MiB'`);
    await con.run(`SET temp_directory = ${quoteLiteral(path.join(work, 'spill'))}`);
    await con.run(`SET preserve_insertion_order = false`);
    if (stream.threads !== undefined) await con.run(`SET threads = ${Math.max(1, Math.floor(stream.threads))}`);

    // the columns as readTable reads them; a CSV file is converted once (its reader parses every row
    // on every pass), a Parquet file or folder read as it is
    let plan: ColumnRead[] = await query(() => planTableRead(con, file, initial, { columns: stream.columns }));
    let from = initial.sql;
    if (initial.format === 'csv' && plan.length > 0) {
      const staged = path.join(work, 'staged.parquet');
      await query(() =>
        con.run(
          `COPY (SELECT ${plan.map((p, i) => `${p.expr} AS c${i}`).join(', ')} FROM ${initial.sql}) TO ${quoteLiteral(staged)} (FORMAT parquet)`,
        ),
      );
      from = `read_parquet(${quoteLiteral(staged)})`;
      plan = plan.map((p, i) => ({ ...p, expr: quoteIdent(`c${i}`) }));
    }

    const opts = parseScoreOptions(options);
    const find = columnFinder(file, plan);
    const labelCol = find(opts.label, 'label');
    for (const e of opts.exclude) find(e, 'excluded');
    const label = await labelPass(labelCol, from, each, opts);

    let split = '0';
    if (opts.time !== undefined && opts.testFrom !== undefined) {
      const timeCol = find(opts.time, 'time');
      if (timeCol.kind !== 'numeric') throw timeKindError(opts.time, timeCol.kind);
      const t = withoutNaN(timeCol.expr);
      const testFrom = sqlDouble(parseTestFrom(opts.testFrom));
      split = `CASE WHEN ${t} < ${testFrom} THEN 0 WHEN ${t} >= ${testFrom} THEN 1 END`;
    }
    const skip = featureSkip(opts);
    const features = plan.filter((c) => !skip.has(c.name));
    const numeric = features.filter((c) => c.kind === 'numeric');
    const base = (x: string) => `(SELECT ${split} AS s, ${label.y} AS y, ${x} AS x FROM ${from})`;

    // one pass for the fit / test rows and, per numeric column, its non-missing fit rows and distinct values
    const stats: number[] = [];
    await each(
      `SELECT count(*) FILTER (WHERE s = 0)::DOUBLE, count(*) FILTER (WHERE s = 1)::DOUBLE, coalesce(sum(y) FILTER (WHERE s = 0), 0)::DOUBLE${numeric
        .map((_, i) => `, count(v${i}) FILTER (WHERE s = 0)::DOUBLE, approx_count_distinct(v${i}) FILTER (WHERE s = 0)::DOUBLE`)
        .join('')}
      FROM (SELECT ${split} AS s, ${label.y} AS y${numeric.map((c, i) => `, ${withoutNaN(c.expr)} AS v${i}`).join('')} FROM ${from})`,
      (r) => stats.push(...r.map(Number)),
    );
    const [fitRows, testRows, events] = stats;
    const hasSplit = split !== '0';
    if (hasSplit) checkSplit(opts.testFrom!, fitRows, testRows);
    checkBothClasses(opts.label, events, fitRows);
    const readMs = Date.now() - t0;
    await stream.onRead?.(readMs);

    const t1 = Date.now();
    const out: FeatureScore[] = [];
    const ctx: ColumnContext = { opts, each, fitRows, events, hasSplit, cutStrategy: stream.cutStrategy ?? 'auto' };
    for (const col of features) {
      const b = base(col.kind === 'numeric' ? withoutNaN(col.expr) : col.expr);
      let score: FeatureScore;
      if (col.kind === 'numeric') {
        const i = numeric.indexOf(col);
        score = await numericColumn(col, b, stats[3 + 2 * i], stats[4 + 2 * i], ctx);
      } else if (col.kind === 'categorical') score = await categoricalColumn(col, b, ctx);
      else score = await multiIdColumn(col, b, ctx);
      out.push(score);
      await stream.onColumn?.(out.length, features.length);
    }
    const report = ivReport(opts, label.positive, hasSplit ? { fit: fitRows, test: testRows } : { fit: fitRows }, events, out);
    return { report, rows: label.rows, readMs, scoreMs: Date.now() - t1 };
  } finally {
    con.closeSync();
    instance.closeSync();
    await rm(work, { recursive: true, force: true });
  }
}

type Each = (sql: string, row: (r: DuckDBValue[]) => void) => Promise<void>;

interface ColumnContext {
  opts: ParsedScoreTableOptions;
  each: Each;
  fitRows: number;
  events: number;
  hasSplit: boolean;
  cutStrategy: 'auto' | 'distinct' | 'rank';
}

/**
 * encodeLabel's checks from one GROUP BY over the label: the classes (the smallest few, in its order),
 * their number, the missing values. Gives the SQL of the 0/1 event and the row count.
 */
async function labelPass(
  col: ColumnRead,
  from: string,
  each: Each,
  opts: ParsedScoreTableOptions,
): Promise<{ y: string; positive: string; rows: number }> {
  if (col.kind === 'multi_id') throw listLabelError(col.name);
  const numeric = col.kind === 'numeric';
  const expr = numeric ? withoutNaN(col.expr) : col.expr;
  // enough of the smallest classes for the error message, ordered as encodeLabel orders them
  const keep = 11;
  const smallest: (number | string)[] = [];
  const before = (a: number | string, b: number | string) =>
    numeric ? (a as number) < (b as number) : (a as string) < (b as string);
  let distinct = 0;
  let nulls = 0;
  let rows = 0;
  await each(`SELECT l, count(*)::DOUBLE FROM (SELECT ${expr} AS l FROM ${from}) GROUP BY l`, ([l, c]) => {
    rows += c as number;
    if (l === null) {
      nulls += c as number;
      return;
    }
    const v = numeric ? (l as number) : String(l);
    distinct++;
    let at = smallest.length;
    while (at > 0 && before(v, smallest[at - 1])) at--;
    if (at < keep) {
      smallest.splice(at, 0, v);
      if (smallest.length > keep) smallest.pop();
    }
  });
  const classes = smallest.map(String);
  const positive = positiveClass(col.name, col.kind, classes, distinct, opts.positive);
  checkLabelNulls(col.name, nulls);
  const value = smallest[classes.indexOf(positive)];
  const literal = numeric ? sqlDouble(value as number) : quoteLiteral(value as string);
  return { y: `(${col.expr} = ${literal})::INTEGER`, positive, rows };
}

async function numericColumn(
  col: ColumnRead,
  base: string,
  n: number,
  distinct: number,
  ctx: ColumnContext,
): Promise<FeatureScore> {
  const { opts, each } = ctx;
  const ranks = cutRanks(n, opts.prebins);
  // rows (v, lo, hi): v is the value at ranks [lo, hi) of the sorted non-missing fit values
  const held: [number, number, number][] = [];
  if (n > 0) {
    const strategy = ctx.cutStrategy === 'auto' ? (distinct * 4 <= n ? 'distinct' : 'rank') : ctx.cutStrategy;
    const sql = strategy === 'distinct' ? ranksByDistinctSql(base, n, opts.prebins) : ranksBySortSql(base, ranks);
    await each(sql, ([v, lo, hi]) => held.push([v as number, lo as number, hi as number]));
    held.sort((a, b) => a[1] - b[1]);
  }
  const valueAt = (rank: number): number => {
    let lo = 0;
    let hi = held.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (rank < held[mid][1]) hi = mid - 1;
      else if (rank >= held[mid][2]) lo = mid + 1;
      else return held[mid][0];
    }
    throw new Error(
      `streaming scorer: column '${col.name}': no value at rank ${rank} of ${n} (the file changed while it was read?)`,
    );
  };
  const cuts = numericCuts(n, valueAt, opts.prebins);
  const k = cuts.length + 1;
  const fit = { counts: new Float64Array(k), events: new Float64Array(k), missingCount: 0, missingEvents: 0 };
  const test = new Float64Array(k);
  let testMissing = 0;
  await each(numericBinsSql(base, cuts), ([s, b, c, e]) => {
    const bin = b as number;
    if (s === 0) {
      if (bin < 0) {
        fit.missingCount += c as number;
        fit.missingEvents += e as number;
      } else {
        fit.counts[bin] += c as number;
        fit.events[bin] += e as number;
      }
    } else if (bin < 0) testMissing += c as number;
    else test[bin] += c as number;
  });
  const bins = mergeNumericBins({ cuts, ...fit, fitRows: ctx.fitRows, totalEvents: ctx.events }, opts);
  let testCounts: Float64Array | undefined;
  if (ctx.hasSplit) {
    testCounts = new Float64Array(bins.labels.length);
    for (let i = 0; i < k; i++) testCounts[bins.binOfPreBin[i]] += test[i];
    testCounts[bins.labels.length - 1] = testMissing;
  }
  return featureScore(col.name, 'numeric', bins, testCounts, opts);
}

async function categoricalColumn(col: ColumnRead, base: string, ctx: ColumnContext): Promise<FeatureScore> {
  const index = new Map<string, number>();
  const values: string[] = [];
  const count: number[] = [];
  const events: number[] = [];
  const test: number[] = [];
  const missing = { count: 0, events: 0 };
  let testMissing = 0;
  await ctx.each(categoricalCountsSql(base), ([x, s, c, e]) => {
    if (x === null) {
      if (s === 0) {
        missing.count += c as number;
        missing.events += e as number;
      } else testMissing += c as number;
      return;
    }
    const v = String(x);
    let i = index.get(v);
    if (i === undefined) {
      i = values.length;
      index.set(v, i);
      values.push(v);
      count.push(0);
      events.push(0);
      test.push(0);
    }
    if (s === 0) {
      count[i] += c as number;
      events[i] += e as number;
    } else test[i] += c as number;
  });
  const bins = categoricalBinsFromCounts(values, count, events, missing, ctx.fitRows, ctx.opts);
  let testCounts: Float64Array | undefined;
  if (ctx.hasSplit) {
    testCounts = new Float64Array(bins.labels.length);
    values.forEach((_, i) => (testCounts![bins.binOfValue[i]] += test[i]));
    testCounts[bins.missingBin] += testMissing;
  }
  return featureScore(col.name, 'categorical', bins, testCounts, ctx.opts);
}

async function multiIdColumn(col: ColumnRead, base: string, ctx: ColumnContext): Promise<FeatureScore> {
  const fit = new IdPairCounts();
  const test = new IdPairCounts();
  const empty = { count: 0, events: 0 };
  let testEmpty = 0;
  await ctx.each(idPairCountsSql(base), ([s, k, id, c, e]) => {
    if (k === 0) {
      if (s === 0) {
        empty.count += c as number;
        empty.events += e as number;
      } else testEmpty += c as number;
    } else if (s === 0) fit.add(id as number, k as number, c as number, e as number);
    else test.add(id as number, k as number, c as number, 0);
  });
  const bins = multiIdBinsFromCounts(fit.weighted(), empty, ctx.fitRows, ctx.opts);
  const testCounts = ctx.hasSplit ? countOnMultiIdBins(bins, test, testEmpty) : undefined;
  return featureScore(col.name, 'multi_id', bins, testCounts, ctx.opts);
}
