import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { quoteIdent, quoteLiteral } from '../io/column-loader';
import { TableReadError } from '../io/table-read.error';
import { tableSource, type TableSource } from '../io/table-reader';
import {
  bucketEncoder,
  categoricalEncoder,
  multiIdEncoder,
  numericEncoder,
  readDoubles,
  type EncodedColumn,
  type FeatureEncoder,
} from './feature-encoders';
import { rowHashUnit } from './feature-hash';
import { cacheKeyOf, normalizeRequest, type NormalizedFeature, type NormalizedRequest } from './sample-build-key';
import { SampleBuildError } from './sample-build.error';
import type {
  BuildSamplesOptions,
  BuiltFeature,
  BuiltSamples,
  EncodedSlot,
  EncodedSplit,
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
}

interface PlannedFeature {
  def: NormalizedFeature;
  expr: string;
  make(rows: number): FeatureEncoder;
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
      make: (n) => (boundaries ? bucketEncoder(n, boundaries) : numericEncoder(n, t.type === 'log')),
    };
  }
  if (def.kind === 'categorical') {
    if (LIST_TYPE.test(type) || !(NUMBER_TYPE.test(type) || STRING_TYPE.test(type) || TIME_TYPE.test(type))) {
      throw mismatch(' (categorical needs a scalar column; lists are multi_id)');
    }
    if (INT32_TYPE.test(type) || (NUMBER_TYPE.test(type) && !WIDE_INT_TYPE.test(type))) {
      return { def, expr: nanIfNull(`CAST(${ref} AS DOUBLE)`), make: (n) => categoricalEncoder(n, 'double', hash, false) };
    }
    const numericStrings = WIDE_INT_TYPE.test(type);
    return { def, expr: `CAST(${ref} AS VARCHAR)`, make: (n) => categoricalEncoder(n, 'string', hash, numericStrings) };
  }
  const child = LIST_TYPE.exec(type)?.[1];
  if (child === undefined) throw mismatch(' (multi_id needs a LIST column, e.g. INTEGER[] or VARCHAR[])');
  const kept = `list_filter(${ref}, x -> x IS NOT NULL${NUMBER_TYPE.test(child) ? ' AND x >= 0' : ''})`;
  if (INT32_TYPE.test(child)) {
    return {
      def,
      expr: `coalesce(CAST(${kept} AS INTEGER[]), []::INTEGER[])`,
      make: (n) => multiIdEncoder(n, 'int', hash, `${field}.source`),
    };
  }
  if (WIDE_INT_TYPE.test(child)) {
    // hashing needs the exact decimal string; ids as given must be < 2^31, which DOUBLE holds exactly
    const as = hash !== null ? 'VARCHAR' : 'DOUBLE';
    return {
      def,
      expr: `coalesce(CAST(${kept} AS ${as}[]), []::${as}[])`,
      make: (n) => multiIdEncoder(n, hash !== null ? 'string' : 'double', hash, `${field}.source`),
    };
  }
  if (child === 'VARCHAR') {
    return {
      def,
      expr: `coalesce(${kept}, []::VARCHAR[])`,
      make: (n) => multiIdEncoder(n, 'string', hash, `${field}.source`),
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
  return { expr: `CASE WHEN ${test} THEN 1.0 ELSE 0.0 END`, positive: pos };
}

/**
 * Builds encoded train/test datasets from a labelled sample table and feature definitions (see the "Sample
 * building" section of libs/samples/README.md for the encoding rules). One DuckDB query joins every feature
 * table (ASOF JOIN for timed tables); the result is encoded into typed arrays.
 */
/**
 * Bytes a build of `rows` rows holds at its peak (and keeps while models train on it), on the high
 * side: per numeric feature three DuckDB copies of the column (read, filtered, joined; 24), the
 * encoder's float64 column (8), the float32 splits and the training split's cut into fitted and
 * validation rows (8) and room for the allocator (8); per slot the same in int32 ids and offsets (56);
 * labels, row ids, times and masks (64). Seen on 10M rows x 100 features (85 numeric, 15 slots):
 * the worker peaked at 47 GiB with the IV trial reading the same table beside it; this says 46 GiB.
 */
export function estimateBuildBytes(rows: number, numeric: number, slots: number): number {
  return rows * (numeric * 48 + slots * 56 + 64);
}

const size = (bytes: number) =>
  bytes >= 2 ** 30
    ? `${(bytes / 2 ** 30).toFixed(1)} GiB`
    : bytes >= 2 ** 20
      ? `${Math.round(bytes / 2 ** 20)} MiB`
      : `${bytes} bytes`;

/**
 * One pass over the samples: the rows (order, split, labels, group keys) and the encoded columns of
 * the features `only` names (indices into req.features; null = all), in that order. Error fields
 * keep the request's own feature indices.
 */
export interface EncodedPart {
  n: number;
  rid: Float64Array;
  test: Uint8Array;
  labels: Float32Array;
  groupValues: Int32Array | null;
  testFrom: number | null;
  features: number[];
  columns: EncodedColumn[];
  timings: { readMs: number; joinMs: number; encodeMs: number };
}

export async function encodePart(
  req: NormalizedRequest,
  only: number[] | null,
  opts: Pick<BuildSamplesOptions, 'memoryLimitBytes'> & {
    onProgress?: (fraction: number, message: string) => void;
    /** asked between steps and chunks: true ends the pass with an error (a thread told to stop) */
    stopped?: () => boolean;
  } = {},
): Promise<EncodedPart> {
  const progress = (fraction: number, message: string): void => {
    if (opts.stopped?.()) throw new Error('sample build stopped');
    opts.onProgress?.(fraction, message);
  };
  const wanted = only ? new Set(only) : null;
  const featureIdx: number[] = [];
  progress(0, 'reading samples');
  const t0 = performance.now();
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  try {
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
    for (const [i, def] of req.features.entries()) {
      if (wanted && !wanted.has(i)) continue;
      featureIdx.push(i);
      const src = def.source;
      const columnField = `features.${i}.${src.column === def.name ? 'name' : 'source.column'}`;
      const checks: { field: string; ref: string }[] = [];
      if (src.kind === 'column') {
        const type = needSample(src.column, columnField);
        planned.push(planFeature(def, i, `s.${quoteIdent(src.column)}`, type, checks));
        for (const c of checks) numericTextChecks.push({ field: c.field, ref: quoteIdent(src.column) });
        continue;
      }
      let table = tableSchemas.get(src.file);
      if (!table) {
        const source = await guarded(`features.${i}.source.file`, 'unreadable', () => tableSource(src.file));
        table = { source, schema: await schemaOf(con, source, `features.${i}.source.file`) };
        tableSchemas.set(src.file, table);
      }
      const where = `feature table ${src.file}`;
      const entityType = columnType(table.schema, src.entityKey, `features.${i}.source.entityKey`, where);
      const sampleKeyType = needSample(src.sampleKey, `features.${i}.source.sampleKey`);
      if (
        keyClass(entityType) !== keyClass(sampleKeyType) &&
        !(keyClass(entityType) === 'string' || keyClass(sampleKeyType) === 'string')
      ) {
        throw new SampleBuildError(
          `features.${i}.source.entityKey`,
          `entity key '${src.entityKey}' (${entityType}) cannot be matched with sample key '${src.sampleKey}' (${sampleKeyType})`,
        );
      }
      if (src.timeColumn) columnType(table.schema, src.timeColumn, `features.${i}.source.timeColumn`, where);
      const type = columnType(table.schema, src.column, columnField, where);
      const groupId = [src.file, src.entityKey, src.sampleKey, src.timeColumn ?? ''].join('\u0000');
      let group = groups.get(groupId);
      if (!group) {
        group = {
          alias: `g${groups.size}`,
          file: src.file,
          source: table.source,
          entityKey: src.entityKey,
          sampleKey: src.sampleKey,
          timeColumn: src.timeColumn,
          columns: new Map(),
          feature: i,
        };
        groups.set(groupId, group);
      }
      let alias = group.columns.get(src.column);
      if (!alias) {
        alias = `c${group.columns.size}`;
        group.columns.set(src.column, alias);
      }
      planned.push(planFeature(def, i, `${group.alias}.${alias}`, type, checks));
      for (const c of checks) numericTextChecks.push({ field: c.field, ref: quoteIdent(src.column), source: table.source.sql });
    }

    // ---- read the sample columns; filter, cap and order the rows
    await guarded('samples.file', 'malformed or unreadable', async () => {
      await con.run(`SET preserve_insertion_order = true`);
      await con.run(`CREATE TEMP TABLE __base AS SELECT ${[...sampleCols].map(quoteIdent).join(', ')} FROM ${samplesSource.sql}`);
    });
    const where = req.filter
      ? `WHERE CAST(${quoteIdent(req.filter.column)} AS VARCHAR) IN (${req.filter.values.map(quoteLiteral).join(', ')})`
      : '';
    await guarded('samples', 'cannot select the rows', () =>
      con.run(
        `CREATE TEMP TABLE __s AS SELECT CAST(rowid AS INTEGER) AS __rid, ${time ? `${time} AS __t, ` : ''}* FROM __base ${where}
         ORDER BY ${time ? '__t, ' : ''}rowid ${req.maxRows !== null ? `LIMIT ${req.maxRows}` : ''}`,
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
    const [[count, nullTimes]] = await rows(
      con,
      `SELECT count(*), ${time ? 'count(*) FILTER (WHERE __t IS NULL)' : '0'} FROM __s`,
    );
    const total = Number(count);
    if (total === 0) throw new SampleBuildError(req.filter ? 'filter' : 'samples.file', 'no sample rows to build from');
    if (Number(nullTimes) > 0) throw new SampleBuildError('samples.time', `${Number(nullTimes)} row(s) have no time`);
    const label = await labelPlan(con, req, labelType);
    let testFrom: number | null = null;
    if (time) {
      testFrom = req.split.testFrom;
      if (testFrom === null) {
        const [[q]] = await rows(con, `SELECT quantile_disc(__t, ${1 - req.split.testFraction}) FROM __s`);
        testFrom = Number(q);
      }
    }
    if (opts.memoryLimitBytes !== undefined) {
      // the whole build's need, whichever share of the features this pass encodes
      const numeric = req.features.filter((f) => f.kind === 'numeric').length;
      const need = estimateBuildBytes(total, numeric, req.features.length - numeric);
      if (need > opts.memoryLimitBytes) {
        throw new SampleBuildError(
          'samples',
          `${total} rows x ${req.features.length} features would take about ${size(need)} of memory to build and train on, ` +
            `over this worker's limit of ${size(opts.memoryLimitBytes)} (ABACUS_SAMPLE_MEMORY_MB): ` +
            `filter the rows, use fewer features, or run on a worker with more memory`,
        );
      }
    }
    const readMs = performance.now() - t0;
    progress(0.15, `joining ${groups.size} feature table(s)`);

    // ---- one query joins every feature table
    const t1 = performance.now();
    const joins: string[] = [];
    for (const g of groups.values()) {
      const f = g.feature;
      const table = tableSchemas.get(g.file)!;
      const entityType = table.schema.get(g.entityKey)!;
      const sampleKeyType = sampleSchema.get(g.sampleKey)!;
      const sameClass = keyClass(entityType) === keyClass(sampleKeyType);
      const k = sameClass ? quoteIdent(g.entityKey) : `CAST(${quoteIdent(g.entityKey)} AS VARCHAR)`;
      const sk = sameClass ? `s.${quoteIdent(g.sampleKey)}` : `CAST(s.${quoteIdent(g.sampleKey)} AS VARCHAR)`;
      const tt = g.timeColumn
        ? timeExpr(quoteIdent(g.timeColumn), table.schema.get(g.timeColumn)!, `features.${f}.source.timeColumn`)
        : null;
      const cols = [...g.columns].map(([column, alias]) => `${quoteIdent(column)} AS ${alias}`);
      const sub = `(SELECT ${k} AS __k${tt ? `, ${tt} AS __tt` : ''}${cols.length ? ', ' + cols.join(', ') : ''} FROM ${g.source.sql})`;
      // duplicates would multiply sample rows (plain join) or make the point-in-time value ambiguous (ASOF)
      const [[dups]] = await guarded(`features.${f}.source.file`, 'unreadable', () =>
        rows(con, `SELECT count(*) - count(DISTINCT (__k${tt ? ', __tt' : ''})) FROM ${sub} WHERE __k IS NOT NULL`),
      );
      if (Number(dups) > 0) {
        throw new SampleBuildError(
          `features.${f}.source.${tt ? 'timeColumn' : 'entityKey'}`,
          tt
            ? `${Number(dups)} row(s) of ${g.file} repeat an (${g.entityKey}, ${g.timeColumn}) pair: the point-in-time value would be ambiguous`
            : `entity key '${g.entityKey}' is not unique in ${g.file} (${Number(dups)} duplicate row(s)); give source.timeColumn for a snapshot table`,
        );
      }
      joins.push(
        tt
          ? `ASOF LEFT JOIN ${sub} ${g.alias} ON ${sk} = ${g.alias}.__k AND s.__t >= ${g.alias}.__tt`
          : `LEFT JOIN ${sub} ${g.alias} ON ${sk} = ${g.alias}.__k`,
      );
    }
    const groupRef = req.samples.groupKey ? `s.${quoteIdent(req.samples.groupKey)}` : null;
    const groupAsNumber = groupType !== null && INT32_TYPE.test(groupType);
    const select = [
      `CAST(s.__rid AS DOUBLE) AS __rid`,
      time ? `s.__t AS __t` : null,
      `${label.expr} AS __y`,
      groupRef
        ? groupAsNumber
          ? `${nanIfNull(`CAST(${groupRef} AS DOUBLE)`)} AS __g`
          : `CAST(${groupRef} AS VARCHAR) AS __g`
        : null,
      ...planned.map((p, i) => `${p.expr} AS f${i}`),
    ].filter((x): x is string => x !== null);
    await guarded('features', 'join failed', () =>
      con.run(
        `CREATE TEMP TABLE __j AS SELECT ${select.join(', ')} FROM __s s ${joins.join(' ')} ORDER BY ${time ? 's.__t, ' : ''}s.__rid`,
      ),
    );
    const [[joined]] = await rows(con, 'SELECT count(*) FROM __j');
    if (Number(joined) !== total) throw new Error(`sample builder: join produced ${Number(joined)} rows for ${total} samples`);
    const joinMs = performance.now() - t1;
    progress(0.4, 'encoding');

    // ---- stream and encode
    const t2 = performance.now();
    const n = total;
    const test = new Uint8Array(n);
    const labels = new Float32Array(n);
    const rid = new Float64Array(n);
    const times = time ? new Float64Array(n) : null;
    const groupValues = groupRef ? new Int32Array(n) : null;
    const groupDict = new Map<string, number>();
    const encoders = planned.map((p) => p.make(n));
    const firstFeature = select.length - planned.length;
    const tmp = new Float64Array(2048);
    const result = await con.stream('SELECT * FROM __j');
    let row = 0;
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) break;
      const m = chunk.rowCount;
      let col = 0;
      readDoubles(chunk.getColumnVector(col++), m, rid, row);
      if (times) {
        readDoubles(chunk.getColumnVector(col++), m, times, row);
        for (let i = row; i < row + m; i++) test[i] = times[i] >= testFrom! ? 1 : 0;
      } else {
        for (let i = row; i < row + m; i++) test[i] = rowHashUnit(rid[i], req.split.seed) < req.split.testFraction ? 1 : 0;
      }
      const buf = tmp.length >= m ? tmp : new Float64Array(m);
      readDoubles(chunk.getColumnVector(col++), m, buf, 0);
      for (let i = 0; i < m; i++) labels[row + i] = buf[i];
      if (groupValues) {
        const v = chunk.getColumnVector(col++);
        if (groupAsNumber) {
          readDoubles(v, m, buf, 0);
          for (let i = 0; i < m; i++) groupValues[row + i] = Number.isNaN(buf[i]) ? -1 : buf[i];
        } else {
          for (let i = 0; i < m; i++) {
            const s = v.getItem(i) as string | null;
            if (s === null) groupValues[row + i] = -1;
            else {
              let c = groupDict.get(s);
              if (c === undefined) groupDict.set(s, (c = groupDict.size));
              groupValues[row + i] = c;
            }
          }
        }
      }
      for (let f = 0; f < encoders.length; f++) encoders[f].read(chunk.getColumnVector(firstFeature + f), row, m, test);
      row += m;
      if (opts.stopped?.()) throw new Error('sample build stopped');
      progress(0.4 + 0.5 * (row / n), 'encoding');
    }
    if (row !== n) throw new Error(`sample builder: streamed ${row} rows, expected ${n}`);
    for (let i = 1; i < n; i++) {
      const ordered = times ? times[i - 1] < times[i] || (times[i - 1] === times[i] && rid[i - 1] < rid[i]) : rid[i - 1] < rid[i];
      if (!ordered) throw new Error('sample builder: joined rows are not in (time, row) order');
    }
    const columns = encoders.map((e) => e.finish(test));
    return {
      n,
      rid,
      test,
      labels,
      groupValues,
      testFrom,
      features: featureIdx,
      columns,
      timings: { readMs, joinMs, encodeMs: performance.now() - t2 },
    };
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

export async function buildSamples(request: SampleBuildRequest, opts: BuildSamplesOptions = {}): Promise<BuiltSamples> {
  const req = normalizeRequest(request);
  const cacheKey = cacheKeyOf(req);
  let lastProgress = 0;
  const progress = (fraction: number, message: string): void => {
    lastProgress = Math.max(lastProgress, Math.min(1, fraction));
    opts.onProgress?.(lastProgress, message);
  };
  const threads = Math.min(Math.max(1, Math.floor(opts.threads ?? 1)), req.features.length);
  const script = opts.threadScript === undefined ? buildThreadScript() : opts.threadScript;
  const t0 = performance.now();
  const part =
    threads > 1 && script
      ? await encodeOnThreads(request, req, threads, script, opts, progress)
      : await encodePart(req, null, { ...opts, onProgress: progress });
  progress(0.92, 'assembling splits');
  const t2 = performance.now();
  const { n, test, labels, groupValues, testFrom, columns } = part;
  const planned = req.features.map((def) => ({ def }));
  const groupName = req.samples.groupKey;
  {
    let testRows = 0;
    for (let i = 0; i < n; i++) testRows += test[i];
    const trainIdx = new Int32Array(n - testRows);
    const testIdx = new Int32Array(testRows);
    for (let i = 0, a = 0, b = 0; i < n; i++) {
      if (test[i]) testIdx[b++] = i;
      else trainIdx[a++] = i;
    }
    if (trainIdx.length === 0)
      throw new SampleBuildError(
        'split',
        `the train split is empty (${n} rows, all in test${testFrom !== null ? ` from ${testFrom}` : ''})`,
      );
    if (testIdx.length === 0)
      throw new SampleBuildError(
        'split',
        `the test split is empty (${n} rows, all in train${testFrom !== null ? ` before ${testFrom}` : ''})`,
      );

    const numericNames: string[] = [];
    const numericCols: Float64Array[] = [];
    const slotCols: { name: string; col: Extract<EncodedColumn, { input: 'slot' }> }[] = [];
    const features: BuiltFeature[] = planned.map((p, i) => {
      const c = columns[i];
      if (c.input === 'numeric') {
        numericNames.push(p.def.name);
        numericCols.push(c.values);
        return { name: p.def.name, kind: p.def.kind, input: 'numeric', missingRate: c.missing / n };
      }
      slotCols.push({ name: p.def.name, col: c });
      return { name: p.def.name, kind: p.def.kind, input: 'slot', vocab: c.vocab, missingRate: c.missing / n };
    });
    // a column at a time, yielding between columns: at 10M rows x 100 features the assembly is many
    // seconds of copying, and the worker's job locks are renewed on this thread's event loop
    const breathe = () => new Promise<void>((resolve) => setImmediate(resolve));
    const slotOf = (name: string, col: (typeof slotCols)[number]['col'], idx: Int32Array): EncodedSlot => {
      const r = idx.length;
      if ('single' in col) {
        const ids = new Int32Array(r);
        const offsets = new Int32Array(r + 1);
        for (let i = 0; i < r; i++) {
          ids[i] = col.single[idx[i]];
          offsets[i + 1] = i + 1;
        }
        return { name, ids, offsets };
      }
      const offsets = new Int32Array(r + 1);
      for (let i = 0; i < r; i++) offsets[i + 1] = offsets[i] + col.offsets[idx[i] + 1] - col.offsets[idx[i]];
      const ids = new Int32Array(offsets[r]);
      for (let i = 0; i < r; i++) ids.set(col.ids.subarray(col.offsets[idx[i]], col.offsets[idx[i] + 1]), offsets[i]);
      return { name, ids, offsets };
    };
    const makeSplit = async (idx: Int32Array): Promise<EncodedSplit> => {
      const r = idx.length;
      const k = numericCols.length;
      const numeric = new Float32Array(r * k);
      for (const [j, values] of numericCols.entries()) {
        for (let i = 0; i < r; i++) numeric[i * k + j] = values[idx[i]];
        await breathe();
      }
      const slots: EncodedSlot[] = [];
      for (const { name, col } of slotCols) {
        slots.push(slotOf(name, col, idx));
        await breathe();
      }
      const y = new Float32Array(r);
      for (let i = 0; i < r; i++) y[i] = labels[idx[i]];
      const split: EncodedSplit = { rows: r, numericNames: [...numericNames], numeric, slots, labels: y };
      if (groupName && groupValues) {
        const g = new Int32Array(r);
        for (let i = 0; i < r; i++) g[i] = groupValues[idx[i]];
        split.keys = { [groupName]: g };
      }
      return split;
    };
    const train = await makeSplit(trainIdx);
    const testSplit = await makeSplit(testIdx);
    const positiveRate = (y: Float32Array): number => {
      let s = 0;
      for (let i = 0; i < y.length; i++) s += y[i];
      return s / y.length;
    };
    progress(1, 'done');
    return {
      train,
      test: testSplit,
      inputs: { numeric: [...numericNames], slots: slotCols.map(({ name, col }) => ({ name, vocab: col.vocab })) },
      idSpaces: Object.fromEntries(slotCols.map(({ name, col }) => [name, col.idSpace])),
      features,
      split: {
        testFrom,
        trainRows: train.rows,
        testRows: testSplit.rows,
        trainPositiveRate: positiveRate(train.labels),
        testPositiveRate: positiveRate(testSplit.labels),
      },
      cacheKey,
      // with threads: the slowest thread's reading and joining; encoding includes the assembly
      timings: {
        readMs: part.timings.readMs,
        joinMs: part.timings.joinMs,
        encodeMs: part.timings.encodeMs + (performance.now() - t2),
        ...(threads > 1 && script ? { threads, wallMs: performance.now() - t0 } : {}),
      },
    };
  }
}

/** The compiled build-thread script beside this module (absent when running from the TypeScript sources). */
export function buildThreadScript(): string | null {
  const file = path.join(__dirname, 'build-thread.js');
  return fs.existsSync(file) ? file : null;
}

/** What a build thread posts back. */
export type BuildThreadMessage =
  | { type: 'progress'; fraction: number; message: string }
  | { type: 'done'; part: EncodedPart }
  | { type: 'error'; error: { name: string; message: string; stack?: string; field?: string; reason?: string } };

/** What a build thread is told: stop at the next chunk (another thread failed). */
export type BuildThreadCommand = { type: 'stop' };

/** The job a build thread is handed (workerData.abacusBuildJob). */
export interface BuildThreadJob {
  request: SampleBuildRequest;
  only: number[];
  memoryLimitBytes?: number;
}

/** A thread's error as it was thrown: a SampleBuildError keeps its field and reason. */
function revive(e: Extract<BuildThreadMessage, { type: 'error' }>['error']): Error {
  const err =
    e.name === 'SampleBuildError' && e.field !== undefined
      ? new SampleBuildError(e.field, e.reason ?? e.message)
      : new Error(e.message);
  err.name = e.name;
  if (e.stack) err.stack = e.stack;
  return err;
}

function sameRows(a: Float64Array, b: Float64Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The encoding pass on `threads` worker threads, the features dealt round-robin among them: each
 * thread reads and joins the samples with its own DuckDB and encodes its features (every feature is
 * encoded on its own, so the columns are those of a single pass). The rows must come out the same
 * in every thread (checked); the first failure ends the others.
 */
async function encodeOnThreads(
  request: SampleBuildRequest,
  req: NormalizedRequest,
  threads: number,
  script: string,
  opts: BuildSamplesOptions,
  progress: (fraction: number, message: string) => void,
): Promise<EncodedPart> {
  const shares = Array.from({ length: threads }, (_, t) => req.features.map((_, i) => i).filter((i) => i % threads === t));
  const fractions = new Array<number>(threads).fill(0);
  const workers: Worker[] = [];
  try {
    const outs = await Promise.all(
      shares.map((only, t) =>
        new Promise<EncodedPart>((resolve, reject) => {
          const job: BuildThreadJob = {
            request,
            only,
            ...(opts.memoryLimitBytes !== undefined ? { memoryLimitBytes: opts.memoryLimitBytes } : {}),
          };
          const w = new Worker(script, { workerData: { abacusBuildJob: job } });
          workers.push(w);
          let settled = false;
          const settle = (f: () => void) => {
            if (!settled) {
              settled = true;
              f();
            }
          };
          w.on('message', (m: BuildThreadMessage) => {
            if (m.type === 'progress') {
              fractions[t] = m.fraction;
              progress(fractions.reduce((a, b) => a + b, 0) / threads, m.message);
            } else if (m.type === 'done') settle(() => resolve(m.part));
            else settle(() => reject(revive(m.error)));
          });
          w.on('error', (err) => settle(() => reject(err)));
          w.on('exit', (code) => settle(() => reject(new Error(`a sample build thread exited (code ${code}) without a result`))));
        }).catch((err: unknown) => {
          // the others stop at their next chunk and end on their own: a thread is never terminated
          // from outside, which would tear its DuckDB down under a running query (and the process with it)
          for (const w of workers) w.postMessage({ type: 'stop' } satisfies BuildThreadCommand);
          throw err;
        }),
      ),
    );
    const first = outs[0];
    for (const o of outs.slice(1)) {
      if (o.n !== first.n || !sameRows(o.rid, first.rid))
        throw new Error('sample builder: the build threads read different rows');
    }
    const columns = new Array<EncodedColumn>(req.features.length);
    for (const o of outs) o.features.forEach((f, j) => (columns[f] = o.columns[j]));
    const max = (k: keyof EncodedPart['timings']) => Math.max(...outs.map((o) => o.timings[k]));
    return {
      ...first,
      features: req.features.map((_, i) => i),
      columns,
      timings: { readMs: max('readMs'), joinMs: max('joinMs'), encodeMs: max('encodeMs') },
    };
  } catch (err) {
    for (const w of workers) w.postMessage({ type: 'stop' } satisfies BuildThreadCommand);
    throw err;
  }
}
