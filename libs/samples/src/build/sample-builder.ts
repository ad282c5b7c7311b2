import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { quoteIdent, quoteLiteral } from '../io/column-loader';
import { TableReadError } from '../io/table-read.error';
import { tableSource, type TableSource } from '../io/table-reader';
import { ColumnEncoder, readDoubles, type ColumnPlan, type SlotIdSpace } from './feature-encoders';
import { cacheKeyOf, normalizeRequest, type NormalizedFeature, type NormalizedRequest } from './sample-build-key';
import { SampleBuildError } from './sample-build.error';
import { ExprError, checkExpr, columnClassOfDuckdb, type CheckedExpr, type ColumnClass } from '../expr/feature-expr.check';
import { compileExpr, timeEpsilon } from '../expr/feature-expr.sql';
import type {
  BuildSamplesOptions,
  BuiltFeature,
  BuiltSamples,
  EncodedSlot,
  EncodedSplit,
  FeatureKind,
  SampleBuildRequest,
} from './sample-build.types';

export { sampleBuildKey } from './sample-build-key';

const NUMBER_TYPE =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL(\(\d+,\s*\d+\))?)$/;
const INT32_TYPE = /^(TINYINT|SMALLINT|INTEGER|UTINYINT|USMALLINT)$/;
const WIDE_INT_TYPE = /^(BIGINT|HUGEINT|UINTEGER|UBIGINT|UHUGEINT)$/;
const TIME_TYPE = /^(DATE|TIMESTAMP(_S|_MS|_NS)?|TIMESTAMP WITH TIME ZONE)$/;
const STRING_TYPE = /^(VARCHAR|BOOLEAN|UUID|ENUM\(.*\))$/;
const LIST_TYPE = /^(.+)\[\]$/;

type Schema = Map<string, string>;

interface TableGroup {
  alias: string;
  file: string;
  source: TableSource;
  entityKey: string;
  sampleKey: string;
  timeColumn: string | null;
  /** table column → alias column in the join subquery */
  columns: Map<string, string>;
  /** index of the first feature that uses the group (for error fields) */
  feature: number;
  /** the request field of its source (features.N.source, or features.N.source.tables.NAME) */
  field: string;
}

/** A feature's encoding before the global statistics (train mean, train dictionary, vocabulary) are known. */
type FeatureSpec =
  | { input: 'numeric'; log: boolean }
  | { input: 'buckets'; boundaries: number[] }
  | { input: 'categorical'; reader: 'double' | 'string'; hash: number | null; numericStrings: boolean }
  | { input: 'multi'; child: 'int' | 'double' | 'string'; hash: number | null; field: string };

interface PlannedFeature {
  def: NormalizedFeature;
  expr: string;
  spec: FeatureSpec;
}

/** errors from DuckDB (or the table reader) as SampleBuildError on `field` */
async function guarded<T>(field: string, what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof SampleBuildError) throw err;
    if (err instanceof TableReadError) throw new SampleBuildError(field, err.reason);
    const msg = err instanceof Error ? err.message : String(err);
    throw new SampleBuildError(field, `${what}: ${msg.split('\n').slice(0, 3).join(' ')}`);
  }
}

async function rows(con: DuckDBConnection, sql: string): Promise<unknown[][]> {
  return (await con.runAndReadAll(sql)).getRows() as unknown[][];
}

async function schemaOf(con: DuckDBConnection, source: TableSource, field: string): Promise<Schema> {
  return guarded(field, 'malformed or unreadable', async () => {
    const r = (await con.runAndReadAll(`DESCRIBE SELECT * FROM ${source.sql}`)).getRowObjectsJS();
    return new Map(r.map((c) => [String(c.column_name), String(c.column_type)]));
  });
}

function columnType(schema: Schema, column: string, field: string, where: string): string {
  const type = schema.get(column);
  if (type === undefined) {
    throw new SampleBuildError(field, `unknown column '${column}' in ${where} (available: ${[...schema.keys()].join(', ')})`);
  }
  return type;
}

/** epoch-seconds DOUBLE of a time column (numbers as they are, DATE / TIMESTAMP → epoch seconds) */
function timeExpr(ref: string, type: string, field: string): string {
  if (NUMBER_TYPE.test(type)) return `CAST(${ref} AS DOUBLE)`;
  if (TIME_TYPE.test(type)) return `CAST(epoch(${ref}) AS DOUBLE)`;
  throw new SampleBuildError(field, `time column of type ${type} is neither numeric nor a DATE / TIMESTAMP`);
}

const keyClass = (type: string): string => (NUMBER_TYPE.test(type) ? 'number' : type === 'VARCHAR' ? 'string' : type);

/** Whether a table column of DuckDB type `type` can be read as a feature of `kind` inside an expression. */
function refTypeFits(kind: FeatureKind, type: string): boolean {
  if (kind === 'numeric') return NUMBER_TYPE.test(type) || TIME_TYPE.test(type) || type === 'BOOLEAN';
  if (kind === 'categorical') return NUMBER_TYPE.test(type) || STRING_TYPE.test(type) || TIME_TYPE.test(type);
  return LIST_TYPE.test(type);
}

const nanIfNull = (expr: string): string => `coalesce(${expr}, 'NaN'::DOUBLE)`;

/** SQL expression and encoder for one feature, checked against the DuckDB type of its column */
function planFeature(
  def: NormalizedFeature,
  i: number,
  ref: string,
  type: string,
  numericTextChecks: { field: string; ref: string }[],
): PlannedFeature {
  const field = `features.${i}`;
  const t = def.transform;
  const hash = t.type === 'hash' ? t.hashBuckets : null;
  const mismatch = (what: string): SampleBuildError =>
    new SampleBuildError(
      `${field}.kind`,
      `${def.kind} feature '${def.name}' cannot be read from a column of type ${type}${what}`,
    );
  if (def.kind === 'numeric') {
    let expr: string;
    if (NUMBER_TYPE.test(type) || type === 'BOOLEAN') expr = `CAST(${ref} AS DOUBLE)`;
    else if (TIME_TYPE.test(type)) expr = `CAST(epoch(${ref}) AS DOUBLE)`;
    else if (type === 'VARCHAR') {
      numericTextChecks.push({ field: `${field}.kind`, ref });
      expr = `TRY_CAST(${ref} AS DOUBLE)`;
    } else throw mismatch('');
    const boundaries = t.type === 'buckets' ? t.boundaries : null;
    return {
      def,
      expr: nanIfNull(expr),
      spec: boundaries ? { input: 'buckets', boundaries: [...boundaries] } : { input: 'numeric', log: t.type === 'log' },
    };
  }
  if (def.kind === 'categorical') {
    if (LIST_TYPE.test(type) || !(NUMBER_TYPE.test(type) || STRING_TYPE.test(type) || TIME_TYPE.test(type))) {
      throw mismatch(' (categorical needs a scalar column; lists are multi_id)');
    }
    if (INT32_TYPE.test(type) || (NUMBER_TYPE.test(type) && !WIDE_INT_TYPE.test(type))) {
      return {
        def,
        expr: nanIfNull(`CAST(${ref} AS DOUBLE)`),
        spec: { input: 'categorical', reader: 'double', hash, numericStrings: false },
      };
    }
    const numericStrings = WIDE_INT_TYPE.test(type);
    return { def, expr: `CAST(${ref} AS VARCHAR)`, spec: { input: 'categorical', reader: 'string', hash, numericStrings } };
  }
  const child = LIST_TYPE.exec(type)?.[1];
  if (child === undefined) throw mismatch(' (multi_id needs a LIST column, e.g. INTEGER[] or VARCHAR[])');
  const kept = `list_filter(${ref}, x -> x IS NOT NULL${NUMBER_TYPE.test(child) ? ' AND x >= 0' : ''})`;
  if (INT32_TYPE.test(child)) {
    return {
      def,
      expr: `coalesce(CAST(${kept} AS INTEGER[]), []::INTEGER[])`,
      spec: { input: 'multi', child: 'int', hash, field: `${field}.source` },
    };
  }
  if (WIDE_INT_TYPE.test(child)) {
    // hashing needs the exact decimal string; ids as given must be < 2^31, which DOUBLE holds exactly
    const as = hash !== null ? 'VARCHAR' : 'DOUBLE';
    return {
      def,
      expr: `coalesce(CAST(${kept} AS ${as}[]), []::${as}[])`,
      spec: { input: 'multi', child: hash !== null ? 'string' : 'double', hash, field: `${field}.source` },
    };
  }
  if (child === 'VARCHAR') {
    return {
      def,
      expr: `coalesce(${kept}, []::VARCHAR[])`,
      spec: { input: 'multi', child: 'string', hash, field: `${field}.source` },
    };
  }
  throw mismatch(' (multi_id needs a list of integers or strings)');
}

/** the positive class of the label (libs/scoring's rule) and the SQL that tests for it */
async function labelPlan(
  con: DuckDBConnection,
  req: NormalizedRequest,
  type: string,
): Promise<{ expr: string; positive: string }> {
  const field = 'samples.label';
  const label = req.samples.label;
  const ref = `s.${quoteIdent(label)}`;
  const numeric = NUMBER_TYPE.test(type);
  if (!numeric && !STRING_TYPE.test(type))
    throw new SampleBuildError(field, `label '${label}' has type ${type}; expected two classes`);
  const value = numeric ? `CAST(${ref} AS DOUBLE)` : `CAST(${ref} AS VARCHAR)`;
  const [[nulls]] = await rows(con, `SELECT count(*) FILTER (WHERE ${ref} IS NULL) FROM __s s`);
  const distinct = await rows(con, `SELECT DISTINCT ${value} AS v FROM __s s WHERE ${ref} IS NOT NULL ORDER BY v LIMIT 11`);
  const classes = distinct.map((r) => String(r[0]));
  if (classes.length !== 2) {
    const shown = classes.slice(0, 10).join(', ') + (classes.length > 10 ? ', ...' : '');
    throw new SampleBuildError(
      field,
      `label '${label}' has ${classes.length} distinct value(s) (${shown}); expected exactly 2 classes`,
    );
  }
  if (Number(nulls) > 0) throw new SampleBuildError(field, `label '${label}' has ${Number(nulls)} missing value(s)`);
  let pos: string | undefined;
  const wantedRaw = req.samples.positive;
  if (wantedRaw !== undefined) {
    let wanted = String(wantedRaw);
    if (classes[0] === 'false' && classes[1] === 'true') {
      if (/^(yes|y|t|1|true)$/i.test(wanted)) wanted = 'true';
      else if (/^(no|n|f|0|false)$/i.test(wanted)) wanted = 'false';
    }
    pos = classes.find((c) => c === wanted || (numeric && Number(c) === Number(wanted)));
    if (pos === undefined) {
      throw new SampleBuildError(
        'samples.positive',
        `positive value '${wanted}' is not a class of label '${label}' (classes: ${classes.join(', ')})`,
      );
    }
  } else {
    pos = classes.find((c) => c === '1' || c.toLowerCase() === 'true');
    if (pos === undefined) {
      throw new SampleBuildError(
        'samples.positive',
        `label '${label}' has classes ${classes.join(', ')}: pass the positive (event) value explicitly`,
      );
    }
  }
  const test = numeric ? `${value} = ${Number(pos)}` : `${value} = ${quoteLiteral(pos)}`;
  // DOUBLE, not DECIMAL: read as the vector's own Float64Array
  return { expr: `CASE WHEN ${test} THEN 1.0::DOUBLE ELSE 0.0::DOUBLE END`, positive: pos };
}

/**
 * Bytes a built set takes once a worker has loaded it to train on: per numeric feature the float32
 * training and test columns and the fitted/validation copies cut from the training split (16), per
 * slot the same in int32 ids and offsets (24), labels, keys and row bookkeeping (32). The build itself
 * streams and stays within its DuckDB memory cap whatever the rows (see BuildSamplesOptions).
 */
export function estimateBuildBytes(rows: number, numeric: number, slots: number): number {
  return rows * (numeric * 16 + slots * 24 + 32);
}

const size = (bytes: number) =>
  bytes >= 2 ** 30
    ? `${(bytes / 2 ** 30).toFixed(1)} GiB`
    : bytes >= 2 ** 20
      ? `${Math.round(bytes / 2 ** 20)} MiB`
      : `${bytes} bytes`;

/** string dictionaries of at most this many values are looked up by DuckDB (an ENUM type), larger ones by the encoder */
export const MAX_SQL_DICTIONARY = 65_536;

/** encoded bytes (about) a file whose rows are out of order is read in at once: its rows are read once per such slice */
export const UNSORTED_RANGE_BYTES = 512 * 2 ** 20;

/** rows a range holds by default: about 130 MB of encoded samples at 100 features */
export const DEFAULT_RANGE_ROWS = 262_144;

/** rows a range holds at least when ranges are cut smaller to give every encoding thread one */
export const MIN_RANGE_ROWS = 32_768;

/** Rows per range: at most `rangeRows`, fewer (not below MIN_RANGE_ROWS) where that gives each of `threads` a range. */
export function rangeRowsFor(rows: number, rangeRows = DEFAULT_RANGE_ROWS, threads = 1): number {
  const most = Math.max(1, Math.floor(rangeRows));
  const t = Math.max(1, Math.floor(threads));
  return Math.min(most, Math.max(Math.min(most, MIN_RANGE_ROWS), Math.ceil(rows / t)));
}

/** bytes of joined rows one sort orders at most, by default (BuildSamplesOptions.joinChunkBytes) */
export const DEFAULT_JOIN_CHUNK_BYTES = 4 * 2 ** 30;

/**
 * Runs of files (indexes into `files`, in the order their rows are joined) whose rows, each run ordered
 * on its own, are the whole set in (time, row) order: the files' time ranges may touch but not overlap
 * (a shared instant only where the earlier file is also read first, so row numbers keep the order);
 * null where they overlap. A run holds at most `runRows` rows (a larger file is a run of its own).
 */
export function orderedFileRuns(
  files: { index: number; rows: number; minT: number; maxT: number }[],
  runRows: number,
): number[][] | null {
  const byTime = files.filter((f) => f.rows > 0).sort((a, b) => a.minT - b.minT || a.index - b.index);
  for (let i = 1; i < byTime.length; i++) {
    const a = byTime[i - 1];
    const b = byTime[i];
    if (a.maxT > b.minT || (a.maxT === b.minT && a.index > b.index)) return null;
  }
  const runs: number[][] = [];
  let rows = 0;
  for (const f of byTime) {
    if (!runs.length || rows + f.rows > runRows) {
      runs.push([]);
      rows = 0;
    }
    runs[runs.length - 1].push(f.index);
    rows += f.rows;
  }
  return runs;
}

/** One feature of a plan: its name and kind, how it is encoded, its vocabulary and id space. */
export type PlannedColumn = ColumnPlan & { name: string; kind: NormalizedFeature['kind']; vocab?: number; idSpace?: SlotIdSpace };

/**
 * A sample build prepared in DuckDB: the samples read, filtered, ordered and joined with every feature
 * table into one on-disk table (`__j`, in time then row order), its global statistics taken. Every range
 * of `ranges` can then be encoded on its own (encodeRange), on any thread that opens `dbFile` read-only.
 * Plain data.
 */
export interface BuildPlan {
  dbFile: string;
  rows: number;
  trainRows: number;
  testRows: number;
  testFrom: number | null;
  time: boolean;
  /** the encoded rows carry their times (EncodedSplit.times) */
  withTimes?: boolean;
  groupName: string | null;
  columns: PlannedColumn[];
  /**
   * consecutive row ranges of __j (by rowid; of the run's table __jK where the rows were ordered a run
   * of files at a time) and how many of their rows are train / test
   */
  ranges: {
    table?: string;
    start: number;
    rows: number;
    train: number;
    test: number;
    sql?: string;
    /** the rows of `sql` come in any order, each with its place in its split (last column, __dest) */
    dest?: boolean;
  }[];
  cacheKey: string;
  timings: {
    readMs: number;
    joinMs: number;
    statsMs: number;
    /** of joinMs: checking each sample file's time order (ranges read in place) */
    orderMs?: number;
    /** of statsMs: the statistics' scan alone (the rest: dictionaries, range counts) */
    scanMs?: number;
    /** of statsMs: string dictionaries as ENUM types, and counting the rows of every range */
    enumMs?: number;
    rangesMs?: number;
    joinRuns?: number;
    joinCompressed?: boolean;
    /** the ranges are read straight from the sample Parquet files (`sql` of each range), no joined copy written */
    direct?: boolean;
  };
}

/** What one range encodes to: its train and test rows (in order) and what was counted on the way. */
export interface EncodedRange {
  index: number;
  train: EncodedSplit;
  test: EncodedSplit;
  /** missing values per feature */
  missing: number[];
  positives: { train: number; test: number };
  encodeMs: number;
  /** of encodeMs: waiting for DuckDB (the query's start and its chunks) */
  fetchMs: number;
}

/** SQL of rowHashUnit(rid, seed) < fraction (feature-hash.ts: murmur3 fmix32 in 32-bit arithmetic on UBIGINT). */
function hashTestSql(rid: string, seed: number, fraction: number): string {
  const fmix = (x: string): string => {
    let h = `xor(${x}, (${x}) >> 16)`;
    h = `((${h}) * 2246822507::UBIGINT) % 4294967296::UBIGINT`;
    h = `xor(${h}, (${h}) >> 13)`;
    h = `((${h}) * 3266489909::UBIGINT) % 4294967296::UBIGINT`;
    return `xor(${h}, (${h}) >> 16)`;
  };
  let s = (seed + 0x9e3779b9) | 0;
  s ^= s >>> 16;
  s = Math.imul(s, 0x85ebca6b);
  s ^= s >>> 13;
  s = Math.imul(s, 0xc2b2ae35);
  s ^= s >>> 16;
  const salt = s >>> 0;
  return `((${fmix(`xor(CAST(${rid} AS UBIGINT), ${salt}::UBIGINT)`)})::DOUBLE / 4294967296.0 < ${fraction})`;
}

/** compares dictionary values: numbers numerically, strings by UTF-16 code units (or as integers when `numericStrings`) */
function valueOrder(numericStrings: boolean): (a: string | number, b: string | number) => number {
  if (numericStrings) {
    return (a, b) => {
      const x = BigInt(a);
      const y = BigInt(b);
      return x < y ? -1 : x > y ? 1 : 0;
    };
  }
  return (a, b) => (typeof a === 'number' && typeof b === 'number' ? a - b : a < b ? -1 : a > b ? 1 : 0);
}

export interface PrepareOptions extends Pick<
  BuildSamplesOptions,
  | 'memoryLimitBytes'
  | 'duckdbMemoryMb'
  | 'rangeRows'
  | 'rangeThreads'
  | 'joinChunkBytes'
  | 'directRanges'
  | 'sqlDictionaryMax'
  | 'unsortedRangeBytes'
> {
  onProgress?(fraction: number, message: string): void;
  /** rows the file order check reads in one call (default TIME_SPAN_SLICE_ROWS) */
  timeSpanSliceRows?: number;
  /**
   * Only these rows of the train split (positions in its (time, row) order, ascending) are kept, in
   * that order, and no test row: the features are still computed over every row (an aggregate reads
   * earlier rows), only what is written, counted and encoded is cut. For reading a sample of rows'
   * values once (discover's screen); the plan's statistics are those of the kept rows.
   */
  keepTrainRows?: Uint32Array;
  /** each encoded row also carries its time (EncodedSplit.times), where the set has one */
  withTimes?: boolean;
}

/**
 * Reads, checks, filters, orders and joins the samples into `workDir`/build.duckdb (DuckDB within its
 * memory cap, spilling to `workDir`/spill), takes the global statistics and cuts the rows into ranges.
 * Throws SampleBuildError naming the field for every problem of the request or the data.
 */
/**
 * Rows per slice of sample files read in place in row order: `rangeRows`, or where every file's row
 * groups (all but its last) hold the same number of rows, a whole number of them (one when a row
 * group is larger than `rangeRows`, up to 4 x `rangeRows`), so that no two slices decode one row group.
 */
async function rowGroupAligned(con: DuckDBConnection, files: string[], rangeRows: number): Promise<number> {
  if (!files.length) return rangeRows;
  const sizes = await rows(
    con,
    `SELECT DISTINCT n FROM (
       SELECT file_name, row_group_id, any_value(row_group_num_rows) AS n,
              max(row_group_id) OVER (PARTITION BY file_name) AS last
       FROM parquet_metadata([${files.map(quoteLiteral).join(', ')}]) GROUP BY file_name, row_group_id)
     WHERE row_group_id < last`,
  );
  if (sizes.length !== 1) return rangeRows;
  const g = Number(sizes[0][0]);
  if (!(g > 0) || g > 4 * rangeRows) return rangeRows;
  return g * Math.max(1, Math.round(rangeRows / g));
}

/** rows of a sample file the time-order check reads in one call (16 bytes a row) */
export const TIME_SPAN_SLICE_ROWS = 4_194_304;

/**
 * One sample file's rows in file order (after the set's filter): how many, their earliest and latest
 * time, and how many come earlier in time than the row before them (0: the file is in time order).
 * One pass over the time column, no sort; the row numbers are checked to come in order.
 */
export async function fileTimeSpan(
  con: DuckDBConnection,
  file: string,
  index: number,
  time: string,
  hive: string,
  filterSql: string | null,
  sliceRows = TIME_SPAN_SLICE_ROWS,
): Promise<{ index: number; rows: number; minT: number; maxT: number; back: number }> {
  const from = `read_parquet([${quoteLiteral(file)}], file_row_number = true${hive})`;
  const [[total]] = await rows(con, `SELECT count(*) FROM ${from}`);
  let rowsRead = 0;
  let minT = Infinity;
  let maxT = -Infinity;
  let back = 0;
  let prevT = NaN;
  let prevR = -1;
  let t = new Float64Array(2048);
  let r = new Float64Array(2048);
  // read whole a slice at a time (DuckDB's threads scan it, in file order): one call a slice, not one
  // a chunk, which would wait on the event loop's thread pool behind the build and scoring threads
  // beside it; slices of `sliceRows` keep the memory bounded whatever the file's size
  for (let lo = 0; lo < Number(total); lo += sliceRows) {
    const cond = [`file_row_number >= ${lo} AND file_row_number < ${lo + sliceRows}`, filterSql].filter(Boolean);
    const result = await con.run(
      `SELECT ${time} AS __t, CAST(file_row_number AS DOUBLE) AS __r FROM ${from} WHERE ${cond.join(' AND ')}`,
    );
    for (let c = 0; c < result.chunkCount; c++) {
      const chunk = result.getChunk(c);
      const m = chunk.rowCount;
      if (t.length < m) {
        t = new Float64Array(m);
        r = new Float64Array(m);
      }
      readDoubles(chunk.getColumnVector(0), m, t, 0);
      readDoubles(chunk.getColumnVector(1), m, r, 0);
      for (let i = 0; i < m; i++) {
        if (!(r[i] > prevR)) throw new Error(`sample builder: ${file} was not read in row order`);
        prevR = r[i];
        const x = t[i];
        if (x < prevT) back++;
        prevT = x;
        if (x < minT) minT = x;
        if (x > maxT) maxT = x;
      }
      rowsRead += m;
    }
  }
  return rowsRead ? { index, rows: rowsRead, minT, maxT, back } : { index, rows: 0, minT: 0, maxT: 0, back: 0 };
}

export async function prepareBuild(request: SampleBuildRequest, workDir: string, opts: PrepareOptions = {}): Promise<BuildPlan> {
  const req = normalizeRequest(request);
  const cacheKey = cacheKeyOf(req);
  const progress = (f: number, m: string) => opts.onProgress?.(f, m);
  progress(0, 'reading samples');
  fs.mkdirSync(workDir, { recursive: true });
  const dbFile = path.join(workDir, 'build.duckdb');
  const spill = path.join(workDir, 'spill');
  const memoryMb = opts.duckdbMemoryMb ?? 1024;
  const t0 = performance.now();
  // a thread per 256 MiB of the cap (4 at 1 GiB, 8 at the default 2 GiB), at most the cores: DuckDB
  // pins buffers per thread when it sorts and writes wide rows, and past the cap many threads fail to
  // pin rather than spill. The rows come out in (time, row) order and the statistics are compensated
  // sums, so the build is the same whatever the thread count.
  const instance = await DuckDBInstance.create(dbFile, {
    memory_limit: `${memoryMb}MiB`,
    temp_directory: spill,
    preserve_insertion_order: 'true',
    threads: String(Math.max(1, Math.min(Math.floor(memoryMb / 256), os.availableParallelism()))),
  });
  const con = await instance.connect();
  try {
    // the joined rows are written once and read twice (statistics, ranges), then removed: stored
    // uncompressed, which writes them a fifth faster and reads them without decoding, for about
    // three times the disk of DuckDB's compressed columns (8 bytes a value)
    await con.run(`SET force_compression = 'uncompressed'`);
    // ---- schemas and validation (no data read yet)
    const samplesSource = await guarded('samples.file', 'unreadable', () => tableSource(req.samples.file));
    const sampleSchema = await schemaOf(con, samplesSource, 'samples.file');
    const samplesWhere = `the sample table ${req.samples.file}`;
    const sampleCols = new Set<string>();
    const needSample = (column: string, field: string): string => {
      const type = columnType(sampleSchema, column, field, samplesWhere);
      sampleCols.add(column);
      return type;
    };
    const labelType = needSample(req.samples.label, 'samples.label');
    const timeType = req.samples.time ? needSample(req.samples.time, 'samples.time') : null;
    const time = req.samples.time && timeType ? timeExpr(quoteIdent(req.samples.time), timeType, 'samples.time') : null;
    const groupType = req.samples.groupKey ? needSample(req.samples.groupKey, 'samples.groupKey') : null;
    if (req.filter) needSample(req.filter.column, 'filter.column');

    const groups = new Map<string, TableGroup>();
    const tableSchemas = new Map<string, { source: TableSource; schema: Schema }>();
    const numericTextChecks: { field: string; ref: string; source?: string }[] = [];
    const planned: PlannedFeature[] = [];
    // expression features: checked against the sample table now, compiled once the label's SQL is known
    // (joined: the SQL of each feature-table feature it reads, a column of the rows below it)
    const expressions: { i: number; checked: CheckedExpr; joined: Map<string, string> }[] = [];
    const classes = new Map<string, ColumnClass>([...sampleSchema].map(([c, t]) => [c, columnClassOfDuckdb(t)]));
    for (const o of req.samples.outcomes ?? []) needSample(o, 'samples.outcomes');
    // feature tables read by expressions: joined below the expressions (their aggregates read the joined
    // values of earlier rows), one join per (table, keys, time) as for table features
    const exprGroups = new Map<string, TableGroup>();
    // a table's column joined on its entity key: the group it joins in (created on first use), its type
    const joinGroup = async (
      into: Map<string, TableGroup>,
      prefix: string,
      i: number,
      src: { file: string; entityKey: string; sampleKey: string; timeColumn?: string | null; column: string },
      field: string,
      columnField: string,
    ): Promise<{ group: TableGroup; type: string; source: TableSource }> => {
      let table = tableSchemas.get(src.file);
      if (!table) {
        const source = await guarded(`${field}.file`, 'unreadable', () => tableSource(src.file));
        table = { source, schema: await schemaOf(con, source, `${field}.file`) };
        tableSchemas.set(src.file, table);
      }
      const where = `feature table ${src.file}`;
      const entityType = columnType(table.schema, src.entityKey, `${field}.entityKey`, where);
      const sampleKeyType = needSample(src.sampleKey, `${field}.sampleKey`);
      if (
        keyClass(entityType) !== keyClass(sampleKeyType) &&
        !(keyClass(entityType) === 'string' || keyClass(sampleKeyType) === 'string')
      ) {
        throw new SampleBuildError(
          `${field}.entityKey`,
          `entity key '${src.entityKey}' (${entityType}) cannot be matched with sample key '${src.sampleKey}' (${sampleKeyType})`,
        );
      }
      if (src.timeColumn) columnType(table.schema, src.timeColumn, `${field}.timeColumn`, where);
      const type = columnType(table.schema, src.column, columnField, where);
      const groupId = [src.file, src.entityKey, src.sampleKey, src.timeColumn ?? ''].join('\u0000');
      let group = into.get(groupId);
      if (!group) {
        group = {
          alias: `${prefix}${into.size}`,
          file: src.file,
          source: table.source,
          entityKey: src.entityKey,
          sampleKey: src.sampleKey,
          timeColumn: src.timeColumn ?? null,
          columns: new Map(),
          feature: i,
          field,
        };
        into.set(groupId, group);
      }
      if (!group.columns.has(src.column)) group.columns.set(src.column, `c${group.columns.size}`);
      return { group, type, source: table.source };
    };
    for (const [i, def] of req.features.entries()) {
      const src = def.source;
      if (src.kind === 'expression') {
        let checked: CheckedExpr;
        const tables = src.tables ?? {};
        try {
          checked = checkExpr(
            src.expression,
            {
              columns: classes,
              label: req.samples.label,
              hasTime: !!time,
              outcomes: new Set(req.samples.outcomes ?? []),
              resolveRef: (n) => (Object.hasOwn(tables, n) ? { kind: tables[n].kind, table: tables[n].file } : null),
            },
            def.kind,
          );
        } catch (err) {
          if (err instanceof ExprError) throw new SampleBuildError(['features', i, 'source', 'expression', ...err.path].join('.'), err.reason);
          throw err;
        }
        for (const c of checked.lineage.columns) needSample(c, `features.${i}.source.expression`);
        // the feature-table features it reads: joined one query level below the expressions
        const joined = new Map<string, string>();
        for (const { feature } of checked.lineage.tables) {
          const t = tables[feature];
          const field = `features.${i}.source.tables.${feature}`;
          const { group, type } = await joinGroup(exprGroups, 'e', i, t, field, `${field}.column`);
          if (!refTypeFits(t.kind, type))
            throw new SampleBuildError(
              `${field}.kind`,
              `${t.kind} feature '${feature}' cannot be read from column '${t.column}' of ${t.file} (${type})`,
            );
          joined.set(feature, `s.__${group.alias}_${group.columns.get(t.column)!}`);
        }
        expressions.push({ i, checked, joined });
        planned.push(null as unknown as PlannedFeature);
        continue;
      }
      const columnField = `features.${i}.${src.column === def.name ? 'name' : 'source.column'}`;
      const checks: { field: string; ref: string }[] = [];
      if (src.kind === 'column') {
        const type = needSample(src.column, columnField);
        planned.push(planFeature(def, i, `s.${quoteIdent(src.column)}`, type, checks));
        for (const c of checks) numericTextChecks.push({ field: c.field, ref: quoteIdent(src.column) });
        continue;
      }
      const { group, type, source } = await joinGroup(groups, 'g', i, src, `features.${i}.source`, columnField);
      planned.push(planFeature(def, i, `${group.alias}.${group.columns.get(src.column)!}`, type, checks));
      for (const c of checks) numericTextChecks.push({ field: c.field, ref: quoteIdent(src.column), source: source.sql });
    }

    // ---- read the sample columns; filter, cap and order the rows. Parquet is read where it lies (a
    // view: the join below is the one pass over the data), each row numbered by its place in the
    // files in read order; other formats are copied into the build's database first
    const cols = [...sampleCols].map(quoteIdent).join(', ');
    const direct =
      samplesSource.format === 'parquet' &&
      !!samplesSource.files?.length &&
      !sampleSchema.has('filename') &&
      !sampleSchema.has('file_row_number') &&
      !sampleSchema.has('file_index');
    // with many Parquet files: their footers' row counts, and the view of the rows of some of them
    let fileRows: number[] | null = null;
    const hive = samplesSource.hive ? ', hive_partitioning = true, hive_types_autocast = false' : ', hive_partitioning = false';
    let baseOf: ((indexes: number[]) => string) | null = null;
    // the row number of each file's first row (its rows are numbered on from there)
    let fileOffsets: number[] = [0];
    if (direct) {
      const files = samplesSource.files!;
      const list = `[${files.map(quoteLiteral).join(', ')}]`;
      if (files.length === 1) {
        await con.run(
          `CREATE VIEW __base AS SELECT CAST(file_row_number AS BIGINT) AS __row, ${cols} FROM read_parquet(${list}, file_row_number = true${hive})`,
        );
      } else {
        // the rows of the files before each one (their footers' counts)
        const counts = new Map(
          (
            await guarded('samples.file', 'malformed or unreadable', () =>
              rows(
                con,
                `SELECT file_name, sum(row_group_num_rows) FROM (SELECT DISTINCT file_name, row_group_id, row_group_num_rows FROM parquet_metadata(${list})) GROUP BY file_name`,
              ),
            )
          ).map(([f, n]) => [String(f), Number(n)]),
        );
        fileRows = files.map((f) => counts.get(f) ?? 0);
        let off = 0;
        fileOffsets = fileRows.map((n) => {
          const o = off;
          off += n;
          return o;
        });
        // a row's file by its index in the list read (file_index), not by a join on its name
        baseOf = (indexes: number[]) =>
          `CREATE OR REPLACE VIEW __base AS SELECT CAST(([${indexes.map((i) => fileOffsets[i]).join(', ')}]::BIGINT[])[CAST(file_index AS BIGINT) + 1] + file_row_number AS BIGINT) AS __row, ${cols}
             FROM read_parquet([${indexes.map((i) => quoteLiteral(files[i])).join(', ')}], file_row_number = true${hive})`;
        await con.run(baseOf(files.map((_, i) => i)));
      }
    } else {
      await guarded('samples.file', 'malformed or unreadable', () =>
        con.run(`CREATE TABLE __copy AS SELECT ${cols} FROM ${samplesSource.sql}`),
      );
      await con.run(`CREATE VIEW __base AS SELECT rowid AS __row, * FROM __copy`);
    }
    const filterSql = req.filter
      ? `CAST(${quoteIdent(req.filter.column)} AS VARCHAR) IN (${req.filter.values.map(quoteLiteral).join(', ')})`
      : null;
    const where = filterSql ? `WHERE ${filterSql}` : '';
    // the rows are put in (time, row) order once, when they are joined: a view, unless a cap needs
    // them ordered here (a second copy of the rows is what a large build can least afford)
    await guarded('samples', 'cannot select the rows', () =>
      con.run(
        `CREATE ${req.maxRows !== null ? 'TABLE' : 'VIEW'} __s AS SELECT CAST(__row AS INTEGER) AS __rid, ${time ? `${time} AS __t, ` : ''}* EXCLUDE (__row) FROM __base ${where}
         ${req.maxRows !== null ? `ORDER BY ${time ? '__t, ' : ''}__row LIMIT ${req.maxRows}` : ''}`,
      ),
    );
    for (const c of numericTextChecks) {
      const [[bad, example]] = await rows(
        con,
        `SELECT count(*), min(${c.ref}) FROM ${c.source ?? '__s'} WHERE ${c.ref} IS NOT NULL AND TRY_CAST(${c.ref} AS DOUBLE) IS NULL`,
      );
      if (Number(bad) > 0) {
        throw new SampleBuildError(
          c.field,
          `numeric feature on a VARCHAR column with ${Number(bad)} non-numeric value(s), e.g. '${String(example)}'`,
        );
      }
    }
    const [[count, nullTimes]] = await guarded('samples.file', 'malformed or unreadable', () =>
      rows(con, `SELECT count(*), ${time ? 'count(*) FILTER (WHERE __t IS NULL)' : '0'} FROM __s`),
    );
    const total = Number(count);
    if (total === 0) throw new SampleBuildError(req.filter ? 'filter' : 'samples.file', 'no sample rows to build from');
    if (Number(nullTimes) > 0) throw new SampleBuildError('samples.time', `${Number(nullTimes)} row(s) have no time`);
    const label = await labelPlan(con, req, labelType);
    // expression features: SQL over the rows of __s (s), window functions of windows one level below
    const innerColumns: string[] = [];
    if (expressions.length) {
      let epsilon = 0.001;
      if (time && expressions.some((x) => x.checked.lineage.windows.some((w) => w.agg === 'distinct'))) {
        const [[most]] = await rows(con, `SELECT max(abs(__t)) FROM __s`);
        epsilon = timeEpsilon(Number(most ?? 0));
      }
      for (const { i, checked, joined } of expressions) {
        const def = req.features[i];
        const c = compileExpr(checked, {
          column: (n) => `s.${quoteIdent(n)}`,
          joined: (n) => joined.get(n)!,
          classOf: (n) => classes.get(n) ?? 'unsupported',
          time: time ? 's.__t' : null,
          label: label.expr,
          rowId: 's.__rid',
          inner: (sql) => {
            innerColumns.push(`${sql} AS __x${innerColumns.length}`);
            return `s.__x${innerColumns.length - 1}`;
          },
          epsilon,
        });
        // a root bucketize is the builder's own buckets of a number, a root cross its hash of the parts;
        // a transform the feature names itself applies on top of what the expression gives
        const own = def.transform.type !== 'none' ? def.transform : null;
        const sqlType = c.kind === 'numeric' ? 'DOUBLE' : c.kind === 'categorical' ? 'VARCHAR' : 'VARCHAR[]';
        const planDef: NormalizedFeature =
          c.transform?.type === 'buckets'
            ? { ...def, kind: 'numeric', transform: c.transform }
            : { ...def, transform: own ?? c.transform ?? { type: 'none' } };
        planned[i] = planFeature(planDef, i, `(${c.sql})`, c.transform?.type === 'buckets' ? 'DOUBLE' : sqlType, []);
        planned[i].def = def;
      }
    }
    let testFrom: number | null = null;
    if (time) {
      testFrom = req.split.testFrom;
      if (testFrom === null) {
        const [[q]] = await rows(con, `SELECT quantile_disc(__t, ${1 - req.split.testFraction}) FROM __s`);
        testFrom = Number(q);
      }
    }
    if (opts.memoryLimitBytes !== undefined) {
      const numeric = req.features.filter((f) => f.kind === 'numeric' && f.transform.type !== 'buckets').length;
      const need = estimateBuildBytes(total, numeric, req.features.length - numeric);
      if (need > opts.memoryLimitBytes) {
        throw new SampleBuildError(
          'samples',
          `${total} rows x ${req.features.length} features would take about ${size(need)} of memory to train on, ` +
            `over this worker's limit of ${size(opts.memoryLimitBytes)} (ABACUS_SAMPLE_MEMORY_MB): ` +
            `filter the rows, use fewer features, or run on a worker with more memory`,
        );
      }
    }
    const readMs = performance.now() - t0;
    progress(0.1, `joining ${groups.size} feature table(s)`);

    // ---- one query joins every feature table into the on-disk table the ranges are read from
    const t1 = performance.now();
    const joins: string[] = [];
    const exprJoins: string[] = [];
    const joinSqlOf = async (g: TableGroup): Promise<string> => {
      const table = tableSchemas.get(g.file)!;
      const entityType = table.schema.get(g.entityKey)!;
      const sampleKeyType = sampleSchema.get(g.sampleKey)!;
      const sameClass = keyClass(entityType) === keyClass(sampleKeyType);
      const k = sameClass ? quoteIdent(g.entityKey) : `CAST(${quoteIdent(g.entityKey)} AS VARCHAR)`;
      const sk = sameClass ? `s.${quoteIdent(g.sampleKey)}` : `CAST(s.${quoteIdent(g.sampleKey)} AS VARCHAR)`;
      const tt = g.timeColumn ? timeExpr(quoteIdent(g.timeColumn), table.schema.get(g.timeColumn)!, `${g.field}.timeColumn`) : null;
      const cols = [...g.columns].map(([column, alias]) => `${quoteIdent(column)} AS ${alias}`);
      const sub = `(SELECT ${k} AS __k${tt ? `, ${tt} AS __tt` : ''}${cols.length ? ', ' + cols.join(', ') : ''} FROM ${g.source.sql})`;
      // duplicates would multiply sample rows (plain join) or make the point-in-time value ambiguous (ASOF)
      const [[dups]] = await guarded(`${g.field}.file`, 'unreadable', () =>
        rows(con, `SELECT count(*) - count(DISTINCT (__k${tt ? ', __tt' : ''})) FROM ${sub} WHERE __k IS NOT NULL`),
      );
      if (Number(dups) > 0) {
        throw new SampleBuildError(
          `${g.field}.${tt ? 'timeColumn' : 'entityKey'}`,
          tt
            ? `${Number(dups)} row(s) of ${g.file} repeat an (${g.entityKey}, ${g.timeColumn}) pair: the point-in-time value would be ambiguous`
            : `entity key '${g.entityKey}' is not unique in ${g.file} (${Number(dups)} duplicate row(s)); give source.timeColumn for a snapshot table`,
        );
      }
      return tt
        ? `ASOF LEFT JOIN ${sub} ${g.alias} ON ${sk} = ${g.alias}.__k AND s.__t >= ${g.alias}.__tt`
        : `LEFT JOIN ${sub} ${g.alias} ON ${sk} = ${g.alias}.__k`;
    };
    for (const g of groups.values()) joins.push(await joinSqlOf(g));
    for (const g of exprGroups.values()) exprJoins.push(await joinSqlOf(g));
    // the columns expressions read from feature tables, beside the sample columns
    const exprJoined = [...exprGroups.values()].flatMap((g) => [...g.columns.values()].map((c) => `${g.alias}.${c} AS __${g.alias}_${c}`));
    // group keys: integer columns as they are, other types as codes of their sorted distinct values
    const groupRef = req.samples.groupKey ? `s.${quoteIdent(req.samples.groupKey)}` : null;
    let groupSelect: string | null = null;
    if (groupRef && groupType !== null) {
      if (INT32_TYPE.test(groupType)) groupSelect = `${nanIfNull(`CAST(${groupRef} AS DOUBLE)`)} AS __g`;
      else {
        await con.run(
          `CREATE TABLE __gd AS SELECT v, CAST(row_number() OVER (ORDER BY v) - 1 AS DOUBLE) AS code
             FROM (SELECT DISTINCT CAST(${quoteIdent(req.samples.groupKey!)} AS VARCHAR) AS v FROM __s WHERE ${quoteIdent(req.samples.groupKey!)} IS NOT NULL)`,
        );
        joins.push(`LEFT JOIN __gd ON CAST(${groupRef} AS VARCHAR) = __gd.v`);
        groupSelect = `coalesce(__gd.code, 'NaN'::DOUBLE) AS __g`;
      }
    }
    const testSql = time ? `s.__t >= ${testFrom}` : hashTestSql('s.__rid', req.split.seed, req.split.testFraction);
    const select = [
      `CAST(s.__rid AS DOUBLE) AS __rid`,
      time ? `s.__t AS __t` : null,
      `CASE WHEN ${testSql} THEN 1.0::DOUBLE ELSE 0.0::DOUBLE END AS __test`,
      `${label.expr} AS __y`,
      groupSelect,
      ...planned.map((p, i) => `${p.expr} AS f${i}`),
    ].filter((x): x is string => x !== null);
    // every feature a column of the samples, read where they lie and already in (time, row) order:
    // the ranges are read straight from the files, nothing joined or ordered is written
    // (time, row) order is the files in time order, each file's rows in its own (time, row) order,
    // where the files' time ranges do not overlap: a file already in order is read in slices of its
    // rows, one that is not in slices of its rows ranked by (time, row)
    const rangeRows = rangeRowsFor(opts.keepTrainRows?.length ?? total, opts.rangeRows, opts.rangeThreads);
    let directFiles: { index: number; sorted: boolean }[] | null = null;
    const to = performance.now();
    // (expression features are computed over all the rows at once: their aggregates read earlier rows)
    if (opts.directRanges !== false && direct && groups.size === 0 && req.maxRows === null && !joins.length && !expressions.length) {
      const files = samplesSource.files!;
      if (!time) directFiles = files.map((_, index) => ({ index, sorted: true }));
      else {
        // each file's rows read once in file order (DuckDB keeps a scan's order): their count, time span
        // and how many rows come earlier in time than the row before them; no sort
        const spans = await guarded('samples.file', 'malformed or unreadable', async () => {
          const out = [];
          for (const [index, f] of files.entries())
            out.push(await fileTimeSpan(con, f, index, time, hive, filterSql, opts.timeSpanSliceRows));
          return out;
        });
        const order = orderedFileRuns(spans, Infinity);
        if (order) {
          directFiles = (order[0] ?? []).map((index) => ({ index, sorted: spans[index].back === 0 }));
        }
      }
    }
    const directRanges = directFiles !== null;
    const orderMs = performance.now() - to;
    // the joined rows: 8 bytes a value uncompressed, as long as that leaves the disk room for the
    // shards and the sort's spill; a set too large for that keeps DuckDB's compressed columns
    const joinedBytes = total * select.length * 8;
    let compressed = false;
    try {
      const st = fs.statfsSync(workDir);
      if (joinedBytes > 0.35 * st.bavail * st.bsize) {
        await con.run('RESET force_compression');
        compressed = true;
      }
    } catch {
      // no file-system figures: uncompressed, as before
    }
    // one sort orders every row, unless the set is larger than a sort should hold and comes in files
    // whose time ranges do not overlap: then runs of files, each ordered on its own, in time order
    const chunkBytes = opts.joinChunkBytes ?? DEFAULT_JOIN_CHUNK_BYTES;
    let runs: number[][] | null = null;
    if (!directRanges && joinedBytes > chunkBytes && fileRows && baseOf && req.maxRows === null && !expressions.length) {
      const files = samplesSource.files!;
      const spans = time
        ? new Map(
            (
              await rows(
                con,
                `SELECT filename, min(${time}), max(${time}) FROM read_parquet([${files.map(quoteLiteral).join(', ')}], filename = true${hive}) GROUP BY filename`,
              )
            ).map(([f, lo, hi]) => [String(f), [Number(lo), Number(hi)] as const]),
          )
        : null;
      const rowBytes = select.length * 8;
      runs = orderedFileRuns(
        files.map((f, index) => ({
          index,
          rows: fileRows![index],
          // an untimed set is in row order, which is read order
          minT: spans ? (spans.get(f)?.[0] ?? 0) : index,
          maxT: spans ? (spans.get(f)?.[1] ?? 0) : index,
        })),
        Math.max(1, Math.floor(chunkBytes / rowBytes)),
      );
      if (runs && runs.length < 2) runs = null;
    }
    const withJoined = exprJoins.length ? `(SELECT s.*, ${exprJoined.join(', ')} FROM __s s ${exprJoins.join(' ')})` : '__s';
    const rowsOf = innerColumns.length ? `(SELECT s.*, ${innerColumns.join(', ')} FROM ${withJoined} s)` : withJoined;
    let joinSql = `SELECT ${select.join(', ')} FROM ${rowsOf} s ${joins.join(' ')} ORDER BY ${time ? 's.__t, ' : ''}s.__rid`;
    const keep = opts.keepTrainRows;
    if (keep) {
      if (directRanges || runs) throw new Error('sample builder: keepTrainRows needs the joined table');
      await con.run('CREATE TABLE __keep (pos BIGINT)');
      for (let k = 0; k < keep.length; k += 100_000)
        await con.run(`INSERT INTO __keep SELECT unnest([${Array.from(keep.subarray(k, k + 100_000)).join(',')}]::BIGINT[])`);
      const order = `${time ? '__t, ' : ''}__rid`;
      joinSql = `SELECT * EXCLUDE (__pos) FROM (
          SELECT *, row_number() OVER (PARTITION BY __test ORDER BY ${order}) - 1 AS __pos
          FROM (SELECT ${select.join(', ')} FROM ${rowsOf} s ${joins.join(' ')}))
        WHERE __test = 0 AND __pos IN (SELECT pos FROM __keep) ORDER BY ${order}`;
    }
    // reading the Parquet files happens here when they are read where they lie
    await guarded(direct ? 'samples.file' : 'features', direct ? 'malformed or unreadable' : 'join failed', async () => {
      if (directRanges) {
        // the statistics read this view; each range reads its own rows of its file (sql of the range)
        await con.run(`CREATE VIEW __j AS SELECT ${select.join(', ')} FROM __s s`);
        return;
      }
      if (!runs) {
        await con.run(`CREATE TABLE __j AS ${joinSql}`);
        return;
      }
      // a table per run (inserting into one table rewrote its row groups: a third more disk, slower)
      for (const [k, run] of runs.entries()) {
        progress(0.1 + (0.2 * k) / runs.length, `joining and ordering rows (${k + 1} of ${runs.length} runs of files)`);
        await con.run(baseOf!(run));
        await con.run(`CREATE TABLE __j${k} AS ${joinSql}`);
      }
      // the runs in time order: every row of __j0 before those of __j1, and so on
      await con.run(`CREATE VIEW __j AS ${runs.map((_, k) => `SELECT * FROM __j${k}`).join(' UNION ALL ')}`);
    });
    if (!directRanges) {
      await con.run(req.maxRows !== null ? 'DROP TABLE __s' : 'DROP VIEW __s');
      await con.run('DROP VIEW __base');
      if (!direct) await con.run('DROP TABLE __copy');
    }
    const joinMs = performance.now() - t1;
    progress(0.3, 'statistics');

    // ---- global statistics; the means by compensated (Kahan-Babuska) sums, so the order the threads
    // add their parts in does not show in the result
    const t2 = performance.now();
    const stats: string[] = ['count(*)', 'count(CASE WHEN __test = 0 THEN 1 END)'];
    const at = new Map<number, number>();
    planned.forEach((p, i) => {
      if (p.spec.input === 'numeric') {
        const x = p.spec.log ? `(CASE WHEN f${i} >= 0 THEN ln(1 + f${i}) ELSE -ln(1 - f${i}) END)` : `f${i}`;
        at.set(i, stats.length);
        // CASE, not FILTER: the same values summed, several times faster over a hundred columns
        stats.push(
          `sum(CASE WHEN __test = 0 AND isfinite(${x}) THEN ${x} END)`,
          `count(CASE WHEN __test = 0 AND isfinite(${x}) THEN 1 END)`,
        );
      } else if (p.spec.input === 'multi' && p.spec.hash === null && p.spec.child !== 'string') {
        at.set(i, stats.length);
        stats.push(`max(list_max(f${i}))`);
      } else if (p.spec.input === 'categorical' && p.spec.hash === null) {
        // the train dictionary, in the same scan (as many values as the column has, whatever the rows)
        at.set(i, stats.length);
        const missing = p.spec.reader === 'double' ? `isnan(f${i})` : `f${i} IS NULL`;
        stats.push(`list(DISTINCT f${i}) FILTER (WHERE __test = 0 AND NOT (${missing}))`);
      }
    });
    const [s] = await rows(con, `SELECT ${stats.join(', ')} FROM __j`);
    const scanMs = performance.now() - t2;
    const n = Number(s[0]);
    if (keep ? n !== keep.length : n !== total)
      throw new Error(`sample builder: join produced ${n} rows for ${keep ? `${keep.length} kept train rows` : `${total} samples`}`);
    const trainRows = Number(s[1]);
    const testRows = n - trainRows;
    if (trainRows === 0)
      throw new SampleBuildError(
        'split',
        `the train split is empty (${n} rows, all in test${testFrom !== null ? ` from ${testFrom}` : ''})`,
      );
    if (testRows === 0 && !keep)
      throw new SampleBuildError(
        'split',
        `the test split is empty (${n} rows, all in train${testFrom !== null ? ` before ${testFrom}` : ''})`,
      );
    const columns: PlannedColumn[] = [];
    for (const [i, p] of planned.entries()) {
      const base = { name: p.def.name, kind: p.def.kind };
      const sp = p.spec;
      if (sp.input === 'numeric') {
        const j = at.get(i)!;
        const count = Number(s[j + 1]);
        // the train mean, the fill of missing values, in float64 as summed
        const fill = count > 0 ? Number(s[j]) / count : 0;
        columns.push({ ...base, input: 'numeric', log: sp.log, fill });
      } else if (sp.input === 'buckets') {
        columns.push({
          ...base,
          input: 'slot',
          encode: 'buckets',
          boundaries: sp.boundaries,
          vocab: sp.boundaries.length + 1,
          idSpace: { kind: 'buckets', boundaries: sp.boundaries },
        });
      } else if (sp.input === 'categorical') {
        if (sp.hash !== null) {
          columns.push({
            ...base,
            input: 'slot',
            encode: 'categorical',
            reader: sp.reader,
            hash: sp.hash,
            dictionary: null,
            vocab: sp.hash,
            idSpace: { kind: 'hash', buckets: sp.hash },
          });
          continue;
        }
        const found = (s[at.get(i)!] as { items: unknown[] } | null)?.items ?? [];
        const values = [...new Set(found.map((v) => (sp.reader === 'double' ? Number(v) : String(v))))];
        values.sort(valueOrder(sp.numericStrings));
        columns.push({
          ...base,
          input: 'slot',
          encode: 'categorical',
          reader: sp.reader,
          hash: null,
          dictionary: values,
          vocab: values.length + 1,
          idSpace: { kind: 'dictionary', values },
        });
      } else {
        const common = {
          ...base,
          input: 'slot' as const,
          encode: 'multi' as const,
          child: sp.child,
          hash: sp.hash,
          field: sp.field,
        };
        if (sp.hash !== null) {
          columns.push({ ...common, dictionary: null, vocab: sp.hash, idSpace: { kind: 'hash', buckets: sp.hash } });
        } else if (sp.child === 'string') {
          const found = await rows(con, `SELECT DISTINCT v FROM (SELECT unnest(f${i}) AS v FROM __j WHERE __test = 0)`);
          const values = [...new Set(found.map((r) => String(r[0])))].sort(valueOrder(false));
          columns.push({ ...common, dictionary: values, vocab: values.length + 1, idSpace: { kind: 'dictionary', values } });
        } else {
          const max = s[at.get(i)!];
          const maxId = max === null || max === undefined ? -1 : Number(max);
          columns.push({
            ...common,
            dictionary: null,
            vocab: maxId + 1 > 0 ? Math.min(maxId + 1, 2 ** 31) : 1,
            idSpace: { kind: 'identity' },
          });
        }
      }
    }
    // string dictionaries as DuckDB ENUM types: the ranges read their ids (1 + rank, unseen 0, missing
    // -1) as integers instead of the strings, which the encoder would look up one by one
    const head = ['__rid', time ? '__t' : null, '__test', '__y', groupSelect ? '__g' : null].filter(
      (x): x is string => x !== null,
    );
    const rangeSelect = [...head];
    const tEnum = performance.now();
    for (const [i, c] of columns.entries()) {
      if (
        c.input === 'slot' &&
        c.encode === 'categorical' &&
        c.reader === 'string' &&
        c.dictionary &&
        c.dictionary.length > 0 &&
        c.dictionary.length <= (opts.sqlDictionaryMax ?? MAX_SQL_DICTIONARY)
      ) {
        await con.run(`CREATE TYPE __e${i} AS ENUM (${c.dictionary.map((v) => quoteLiteral(String(v))).join(', ')})`);
        c.codes = true;
        rangeSelect.push(
          `CASE WHEN f${i} IS NULL THEN -1 ELSE coalesce(CAST(enum_code(TRY_CAST(f${i} AS __e${i})) AS INTEGER) + 1, 0) END AS f${i}`,
        );
      } else rangeSelect.push(`f${i}`);
    }
    const enumMs = performance.now() - tEnum;
    // ranges small enough for every encoding thread to have one (the rows are the same whatever the cut): rangeRows
    const ranges: BuildPlan['ranges'] = [];
    const tRanges = performance.now();
    if (directFiles) {
      // ranges of one file each, in the files' time order: slices of a file's own row numbers where its
      // rows are in order (the Parquet reader skips to them), else slices of its rows ranked by (time,
      // row) (__rk: the rank's slice of every row of such a file), each read ordered
      const files = samplesSource.files!;
      const place = new Map(directFiles.map((f, k) => [f.index, k]));
      const unsorted = directFiles.filter((f) => !f.sorted).map((f) => f.index);
      // slices of files in order along their row groups where they are all alike: a slice that cut
      // one in two would make two threads decode it
      const sliceRows = await rowGroupAligned(
        con,
        directFiles.filter((f) => f.sorted).map((f) => files[f.index]),
        rangeRows,
      );
      await con.run(
        `CREATE TABLE __fo AS SELECT * FROM (VALUES ${fileOffsets.map((o, i) => `(${i}, ${o}, ${!unsorted.includes(i)})`).join(', ')}) v(idx, off, sorted)`,
      );
      const fileOf = `ASOF JOIN (SELECT * FROM __fo WHERE idx = (SELECT max(idx) FROM __fo g WHERE g.off = __fo.off)) f ON j.__rid >= f.off`;
      const perRange = await rows(
        con,
        `SELECT f.idx, (CAST(j.__rid AS BIGINT) - f.off) // ${sliceRows} AS k, count(*), count(*) FILTER (WHERE j.__test = 1), NULL, NULL
           FROM __j j ${fileOf} WHERE f.sorted GROUP BY ALL`,
      );
      if (unsorted.length) {
        // a file out of order is read as few times as its slices: one slice up to UNSORTED_RANGE_BYTES of
        // encoded rows (more rows than a range, which a thread holds while it orders them)
        const numeric = planned.filter((p) => p.spec.input === 'numeric').length;
        const rowBytes = numeric * 4 + (planned.length - numeric) * 8 + 16;
        const unsortedRows = Math.max(rangeRows, Math.floor((opts.unsortedRangeBytes ?? UNSORTED_RANGE_BYTES) / rowBytes));
        await con.run(
          `CREATE TABLE __rk AS SELECT f, r, test, k, row_number() OVER (PARTITION BY f, k, test ORDER BY t, rid) - 1 AS d FROM (
             SELECT f.idx AS f, CAST(j.__rid AS BIGINT) - f.off AS r, j.__test AS test, j.__t AS t, j.__rid AS rid,
               (row_number() OVER (PARTITION BY f.idx ORDER BY j.__t, j.__rid) - 1) // ${unsortedRows} AS k
             FROM __j j ${fileOf} WHERE NOT f.sorted)`,
        );
        perRange.push(
          ...(await rows(con, `SELECT f, k, count(*), count(*) FILTER (WHERE test = 1), min(r), max(r) FROM __rk GROUP BY ALL`)),
        );
      }
      perRange.sort((a, b) => place.get(Number(a[0]))! - place.get(Number(b[0]))! || Number(a[1]) - Number(b[1]));
      for (const r of perRange) {
        const file = Number(r[0]);
        const k = Number(r[1]);
        const all = Number(r[2]);
        const test = Number(r[3]);
        const sorted = r[4] === null;
        const lo = sorted ? k * sliceRows : Number(r[4]);
        const where = [
          sorted
            ? `file_row_number >= ${lo} AND file_row_number < ${lo + sliceRows}`
            : `file_row_number >= ${lo} AND file_row_number <= ${Number(r[5])}`,
          filterSql,
        ].filter((x): x is string => x !== null);
        const inner = `SELECT CAST(file_row_number + ${fileOffsets[file]} AS INTEGER) AS __rid, ${time ? `${time} AS __t, ` : ''}${cols}
           FROM read_parquet([${quoteLiteral(files[file])}], file_row_number = true${hive})${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
        ranges.push({
          start: lo,
          rows: all,
          train: all - test,
          test,
          // a slice of a file out of order: its rows as they come, each with its place (no sort of the rows)
          sql: sorted
            ? `SELECT ${rangeSelect.join(', ')} FROM (SELECT ${select.join(', ')} FROM (${inner}) s)`
            : `SELECT ${rangeSelect.join(', ')}, CAST(rk.__d AS INTEGER) AS __dest FROM (SELECT ${select.join(', ')} FROM (${inner}) s) j
                 JOIN (SELECT r AS __r, d AS __d FROM __rk WHERE f = ${file} AND k = ${k}) rk ON rk.__r = CAST(j.__rid AS BIGINT) - ${fileOffsets[file]}`,
          ...(sorted ? {} : { dest: true }),
        });
      }
    }
    for (const table of directRanges ? [] : runs ? runs.map((_, k) => `__j${k}`) : ['__j']) {
      const perRange = await rows(
        con,
        `SELECT rowid // ${rangeRows} AS r, count(*), count(*) FILTER (WHERE __test = 1) FROM ${table} GROUP BY r ORDER BY r`,
      );
      for (const r of perRange) {
        const all = Number(r[1]);
        const test = Number(r[2]);
        const start = Number(r[0]) * rangeRows;
        ranges.push({
          ...(runs ? { table } : {}),
          start,
          rows: all,
          train: all - test,
          test,
          sql: `SELECT ${rangeSelect.join(', ')} FROM ${table} WHERE rowid >= ${start} AND rowid < ${start + all}`,
        });
      }
    }
    const rangesMs = performance.now() - tRanges;
    await con.run('CHECKPOINT');
    progress(0.35, 'encoding');
    return {
      dbFile,
      rows: n,
      trainRows,
      testRows,
      testFrom,
      time: time !== null,
      ...(opts.withTimes && time !== null ? { withTimes: true } : {}),
      groupName: req.samples.groupKey,
      columns,
      ranges,
      cacheKey,
      timings: {
        readMs,
        joinMs,
        statsMs: performance.now() - t2,
        orderMs,
        scanMs,
        enumMs,
        rangesMs,
        joinRuns: directRanges ? 0 : (runs?.length ?? 1),
        joinCompressed: compressed,
        direct: directRanges,
      },
    };
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

/**
 * Opens a prepared build read-only (one per thread), within `memoryMb` of DuckDB memory. Each opening
 * spills to its own directory (removed on close): DuckDB names its spill files the same in every
 * instance, so instances sharing the default directory beside the database would write over each
 * other's (a range ordered as it is read spills past a thread's share of the memory).
 */
export async function openPlan(plan: BuildPlan, memoryMb = 256): Promise<{ con: DuckDBConnection; close(): void }> {
  const spill = path.join(path.dirname(plan.dbFile), 'spill', `open-${process.pid}-${randomBytes(6).toString('hex')}`);
  fs.mkdirSync(spill, { recursive: true });
  const instance = await DuckDBInstance.create(plan.dbFile, {
    access_mode: 'READ_ONLY',
    memory_limit: `${memoryMb}MiB`,
    threads: '1',
    temp_directory: spill,
  });
  const con = await instance.connect();
  return {
    con,
    close: () => {
      con.closeSync();
      instance.closeSync();
      fs.rmSync(spill, { recursive: true, force: true });
    },
  };
}

/**
 * Encodes range `index` of a prepared build: reads its rows of __j in order and writes every feature
 * straight into the range's train and test splits. `stopped` is asked between chunks.
 */
export async function encodeRange(
  con: DuckDBConnection,
  plan: BuildPlan,
  index: number,
  stopped?: () => boolean,
): Promise<EncodedRange> {
  const t0 = performance.now();
  const range = plan.ranges[index];
  const counts: [number, number] = [range.train, range.test];
  const numericNames = plan.columns.filter((c) => c.input === 'numeric').map((c) => c.name);
  const width = numericNames.length;
  const numeric: [Float32Array, Float32Array] = [new Float32Array(counts[0] * width), new Float32Array(counts[1] * width)];
  const labels: [Float32Array, Float32Array] = [new Float32Array(counts[0]), new Float32Array(counts[1])];
  const keys: [Int32Array, Int32Array] | null = plan.groupName ? [new Int32Array(counts[0]), new Int32Array(counts[1])] : null;
  const timesOut: [Float64Array, Float64Array] | null = plan.withTimes ? [new Float64Array(counts[0]), new Float64Array(counts[1])] : null;
  let col = 0;
  const scattered = range.dest === true;
  const encoders = plan.columns.map(
    (c) => new ColumnEncoder(c, ColumnEncoder.sinks(c, counts, numeric, width, c.input === 'numeric' ? col++ : -1, scattered)),
  );
  let places = new Int32Array(2048);
  const fill: [number, number] = [0, 0];
  let test = new Uint8Array(2048);
  let dest = new Int32Array(2048);
  let buf = new Float64Array(2048);
  let times = new Float64Array(2048);
  let prevT = -Infinity;
  let prevRid = -Infinity;
  let tf = performance.now();
  const result = await con.stream(
    range.sql ?? `SELECT * FROM ${range.table ?? '__j'} WHERE rowid >= ${range.start} AND rowid < ${range.start + range.rows}`,
  );
  let fetchMs = performance.now() - tf;
  let read = 0;
  for (;;) {
    tf = performance.now();
    const chunk = await result.fetchChunk();
    fetchMs += performance.now() - tf;
    if (!chunk || chunk.rowCount === 0) break;
    const m = chunk.rowCount;
    if (test.length < m) {
      test = new Uint8Array(m);
      dest = new Int32Array(m);
      buf = new Float64Array(m);
      times = new Float64Array(m);
      places = new Int32Array(m);
    }
    let c = 0;
    readDoubles(chunk.getColumnVector(c++), m, buf, 0);
    const rid = buf.slice(0, m);
    if (plan.time) readDoubles(chunk.getColumnVector(c++), m, times, 0);
    // the rows must come in (time, row) order (a range is read by rowid, which must follow the join's
    // ORDER BY), unless each comes with its place
    for (let i = 0; i < m && !scattered; i++) {
      const t = plan.time ? times[i] : 0;
      if (!(t > prevT || (t === prevT && rid[i] > prevRid)))
        throw new Error('sample builder: joined rows are not in (time, row) order');
      prevT = t;
      prevRid = rid[i];
    }
    if (scattered) {
      const v = chunk.getColumnVector(chunk.columnCount - 1);
      const items = (v as unknown as { items?: unknown }).items;
      for (let i = 0; i < m; i++) places[i] = items instanceof Int32Array ? items[i] : Number(v.getItem(i));
    }
    readDoubles(chunk.getColumnVector(c++), m, buf, 0);
    for (let i = 0; i < m; i++) {
      const s = buf[i] === 1 ? 1 : 0;
      test[i] = s;
      if (!scattered) dest[i] = fill[s]++;
      else {
        const d = places[i];
        if (!(d >= 0 && d < counts[s])) throw new Error(`sample builder: range ${index} places a row at ${d} of ${counts[s]}`);
        dest[i] = d;
        fill[s]++;
      }
    }
    readDoubles(chunk.getColumnVector(c++), m, buf, 0);
    for (let i = 0; i < m; i++) labels[test[i]][dest[i]] = buf[i];
    if (timesOut) for (let i = 0; i < m; i++) timesOut[test[i]][dest[i]] = times[i];
    if (keys) {
      readDoubles(chunk.getColumnVector(c++), m, buf, 0);
      for (let i = 0; i < m; i++) keys[test[i]][dest[i]] = Number.isNaN(buf[i]) ? -1 : buf[i];
    }
    for (let f = 0; f < encoders.length; f++) encoders[f].read(chunk.getColumnVector(c + f), m, test, dest);
    read += m;
    if (stopped?.()) throw new Error('sample build stopped');
  }
  if (read !== range.rows || fill[0] !== counts[0] || fill[1] !== counts[1])
    throw new Error(
      `sample builder: range ${index} read ${read} rows (${fill[0]} train, ${fill[1]} test), expected ${range.rows}`,
    );
  const split = (s: 0 | 1): EncodedSplit => {
    const slots: EncodedSlot[] = [];
    encoders.forEach((e, f) => {
      if (e.plan.input === 'slot') slots.push({ name: plan.columns[f].name, ...e.slot(s) });
    });
    const out: EncodedSplit = { rows: counts[s], numericNames: [...numericNames], numeric: numeric[s], slots, labels: labels[s] };
    if (keys && plan.groupName) out.keys = { [plan.groupName]: keys[s] };
    if (timesOut) out.times = timesOut[s];
    return out;
  };
  const positives = (y: Float32Array) => y.reduce((a, b) => a + b, 0);
  return {
    index,
    train: split(0),
    test: split(1),
    missing: encoders.map((e) => e.missing),
    positives: { train: positives(labels[0]), test: positives(labels[1]) },
    encodeMs: performance.now() - t0,
    fetchMs,
  };
}

/** What a build is, once every range is encoded: what the runtime's model spec needs and the set's description. */
export function describeBuild(
  plan: BuildPlan,
  missing: number[],
  positives: { train: number; test: number },
): Omit<BuiltSamples, 'train' | 'test' | 'timings'> {
  const features: BuiltFeature[] = plan.columns.map((c, f) =>
    c.input === 'numeric'
      ? { name: c.name, kind: c.kind, input: 'numeric', missingRate: missing[f] / plan.rows }
      : { name: c.name, kind: c.kind, input: 'slot', vocab: c.vocab!, missingRate: missing[f] / plan.rows },
  );
  const slots = plan.columns.filter((c) => c.input === 'slot');
  return {
    inputs: {
      numeric: plan.columns.filter((c) => c.input === 'numeric').map((c) => c.name),
      slots: slots.map((c) => ({ name: c.name, vocab: c.vocab! })),
    },
    idSpaces: Object.fromEntries(slots.map((c) => [c.name, c.idSpace!])),
    features,
    split: {
      testFrom: plan.testFrom,
      trainRows: plan.trainRows,
      testRows: plan.testRows,
      trainPositiveRate: positives.train / plan.trainRows,
      testPositiveRate: positives.test / plan.testRows,
    },
    cacheKey: plan.cacheKey,
  };
}

/** The splits of consecutive ranges as one split (rows in range order). */
export function concatSplits(parts: EncodedSplit[]): EncodedSplit {
  const first = parts[0];
  const rowsOf = parts.reduce((a, p) => a + p.rows, 0);
  const numeric = new Float32Array(rowsOf * first.numericNames.length);
  const labels = new Float32Array(rowsOf);
  let at = 0;
  for (const p of parts) {
    numeric.set(p.numeric, at * first.numericNames.length);
    labels.set(p.labels, at);
    at += p.rows;
  }
  const slots = first.slots.map((s0, k) => {
    const nnz = parts.reduce((a, p) => a + p.slots[k].offsets[p.rows], 0);
    const ids = new Int32Array(nnz);
    const offsets = new Int32Array(rowsOf + 1);
    let r = 0;
    let z = 0;
    for (const p of parts) {
      const s = p.slots[k];
      ids.set(s.ids.subarray(0, s.offsets[p.rows]), z);
      for (let i = 1; i <= p.rows; i++) offsets[r + i] = z + s.offsets[i];
      r += p.rows;
      z += s.offsets[p.rows];
    }
    return { name: s0.name, ids, offsets };
  });
  const out: EncodedSplit = { rows: rowsOf, numericNames: [...first.numericNames], numeric, slots, labels };
  if (parts.every((p) => p.times)) {
    out.times = new Float64Array(rowsOf);
    let r = 0;
    for (const p of parts) {
      out.times.set(p.times!, r);
      r += p.rows;
    }
  }
  if (first.keys) {
    out.keys = Object.fromEntries(
      Object.keys(first.keys).map((k) => {
        const v = new Int32Array(rowsOf);
        let r = 0;
        for (const p of parts) {
          v.set(p.keys![k], r);
          r += p.rows;
        }
        return [k, v];
      }),
    );
  }
  return out;
}

/**
 * Builds encoded train/test datasets in memory (see the "Sample building" section of libs/samples/README.md
 * for the encoding rules): prepareBuild in a scratch directory, then every range encoded on this thread and
 * put together. For sets that fit in memory (tests, small tools); workers build shards range by range
 * instead (the workflows' BuiltSamplesCache), never holding the whole set.
 */
export async function buildSamples(request: SampleBuildRequest, opts: BuildSamplesOptions = {}): Promise<BuiltSamples> {
  let lastProgress = 0;
  const progress = (fraction: number, message: string): void => {
    lastProgress = Math.max(lastProgress, Math.min(1, fraction));
    opts.onProgress?.(lastProgress, message);
  };
  const work = path.join(opts.workDir ?? os.tmpdir(), `abacus-build-${process.pid}-${randomBytes(4).toString('hex')}`);
  const t0 = performance.now();
  try {
    const plan = await prepareBuild(request, work, { ...opts, onProgress: progress });
    const t1 = performance.now();
    const db = await openPlan(plan, opts.duckdbMemoryMb);
    const parts: EncodedRange[] = [];
    try {
      for (let r = 0; r < plan.ranges.length; r++) {
        parts.push(await encodeRange(db.con, plan, r));
        progress(0.35 + 0.6 * ((r + 1) / plan.ranges.length), 'encoding');
      }
    } finally {
      db.close();
    }
    const missing = plan.columns.map((_, f) => parts.reduce((a, p) => a + p.missing[f], 0));
    const positives = parts.reduce((a, p) => ({ train: a.train + p.positives.train, test: a.test + p.positives.test }), {
      train: 0,
      test: 0,
    });
    const nonEmpty = (s: 'train' | 'test') => parts.map((p) => p[s]).filter((x) => x.rows > 0);
    const built: BuiltSamples = {
      train: concatSplits(nonEmpty('train')),
      test: concatSplits(nonEmpty('test')),
      ...describeBuild(plan, missing, positives),
      timings: {
        readMs: plan.timings.readMs,
        joinMs: plan.timings.joinMs + plan.timings.statsMs,
        encodeMs: performance.now() - t1,
        wallMs: performance.now() - t0,
        direct: plan.timings.direct ?? false,
      },
    };
    progress(1, 'done');
    return built;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
