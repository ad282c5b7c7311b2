import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection, type DuckDBListVector, type DuckDBVector } from '@duckdb/node-api';
import type { FeatureKind } from '../simulator/world.types';
import { quoteIdent, quoteLiteral } from './column-loader';
import { readTableOptionsSchema, type ReadTableOptions } from './read-table-options.schema';
import { TableReadError } from './table-read.error';
import type { Table, TableColumn, TableSchema, TableSchemaColumn } from './table.types';

const NUMERIC_TYPE =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL(\(\d+,\s*\d+\))?)$/;
const TIME_TYPE = /^(DATE|TIMESTAMP(_S|_MS|_NS)?|TIMESTAMP WITH TIME ZONE)$/;
const CATEGORICAL_TYPE = /^(VARCHAR|BOOLEAN|UUID|ENUM\(.*\))$/;
const INT_LIST_TYPE = /^(TINYINT|SMALLINT|INTEGER|BIGINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT)\[\]$/;

/**
 * Kind of a DuckDB column type: numbers (and dates/timestamps, read as epoch seconds) are numeric even when
 * they hold few distinct integers; strings and booleans are categorical; lists of integers are multi-id.
 */
export function kindOfDuckdbType(type: string): FeatureKind | 'unsupported' {
  if (NUMERIC_TYPE.test(type) || TIME_TYPE.test(type)) return 'numeric';
  if (CATEGORICAL_TYPE.test(type)) return 'categorical';
  if (INT_LIST_TYPE.test(type)) return 'multi_id';
  return 'unsupported';
}

export interface TableSource {
  format: 'csv' | 'parquet';
  sql: string;
  /** Parquet only: the files, in the order they are read, and whether their folders are hive partitions */
  files?: string[];
  hive?: boolean;
  /** CSV only: the delimiter the file is read with */
  delimiter?: string;
}

/** Parquet files under a directory (links followed), in path order; whether their paths hold hive partitions (k=v/). */
async function parquetFilesUnder(dir: string): Promise<{ files: string[]; hive: boolean }> {
  const files: string[] = [];
  const walk = async (d: string): Promise<void> => {
    const entries = (await readdir(d, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (/\.(parquet|pq)$/i.test(e.name)) files.push(p);
    }
  };
  await walk(dir);
  return {
    files,
    hive: files.some((f) =>
      path
        .relative(dir, f)
        .split(path.sep)
        .slice(0, -1)
        .some((s) => s.includes('=')),
    ),
  };
}

/**
 * The DuckDB table function that reads a file as the platform does (strict CSV, explicit delimiter),
 * or every Parquet file under a directory as one table (hive partition folders as VARCHAR columns).
 */
export async function tableSource(file: string): Promise<TableSource> {
  const st = await stat(file).catch(() => null);
  if (st?.isDirectory()) {
    const { files, hive } = await parquetFilesUnder(file);
    if (files.length === 0) throw new TableReadError(file, 'the directory holds no Parquet files');
    return {
      format: 'parquet',
      sql: `read_parquet([${files.map(quoteLiteral).join(', ')}], hive_partitioning = ${hive}${hive ? ', hive_types_autocast = false' : ''})`,
      files,
      hive,
    };
  }
  const lower = file.toLowerCase();
  const isParquet = lower.endsWith('.parquet') || lower.endsWith('.pq');
  const isCsv = /\.(csv|tsv)(\.gz)?$/.test(lower);
  if (!isParquet && !isCsv) {
    throw new TableReadError(
      file,
      `unsupported extension '${path.extname(file) || '(none)'}' (expected .csv, .tsv, .csv.gz or .parquet)`,
    );
  }
  try {
    const s = await stat(file);
    if (!s.isFile()) throw new TableReadError(file, 'not a regular file');
  } catch (err) {
    if (err instanceof TableReadError) throw err;
    throw new TableReadError(file, 'file does not exist');
  }
  if (isParquet) return { format: 'parquet', sql: `read_parquet(${quoteLiteral(file)})`, files: [file], hive: false };
  const delim = lower.includes('.tsv') ? '\t' : await sniffDelimiter(file);
  // explicit delimiter + strict mode: a ragged row is an error, never a silently re-sniffed single column or a skipped line
  return {
    format: 'csv',
    delimiter: delim,
    sql: `read_csv(${quoteLiteral(file)}, delim=${quoteLiteral(delim)}, header=true, auto_detect=true, strict_mode=true, ignore_errors=false, null_padding=false)`,
  };
}

/** the most frequent of , ; | \t in the header line (comma when none) */
async function sniffDelimiter(file: string): Promise<string> {
  if (file.toLowerCase().endsWith('.gz')) return ',';
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const header = buf.subarray(0, bytesRead).toString('utf8').split(/\r?\n/)[0] ?? '';
    let best = ',';
    let bestCount = 0;
    for (const d of [',', ';', '|', '\t']) {
      const n = header.split(d).length - 1;
      if (n > bestCount) {
        best = d;
        bestCount = n;
      }
    }
    return best;
  } finally {
    await fh.close();
  }
}

/** A DuckDB failure while reading `file`, as readTable reports it (a TableReadError passes through). */
export function asTableReadError(file: string, err: unknown): TableReadError {
  if (err instanceof TableReadError) return err;
  const msg = err instanceof Error ? err.message : String(err);
  return new TableReadError(file, `malformed or unreadable: ${msg.split('\n').slice(0, 3).join(' ')}`);
}

async function withConnection<T>(file: string, fn: (con: DuckDBConnection) => Promise<T>): Promise<T> {
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  try {
    return await fn(con);
  } catch (err) {
    throw asTableReadError(file, err);
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

async function schemaOf(con: DuckDBConnection, source: TableSource): Promise<{ name: string; type: string }[]> {
  const rows = (await con.runAndReadAll(`DESCRIBE SELECT * FROM ${source.sql}`)).getRowObjectsJS();
  return rows.map((r) => ({ name: String(r.column_name), type: String(r.column_type) }));
}

/** Schema (name, detected kind, DuckDB type) and row count of a CSV or Parquet file. */
export async function describeTable(file: string): Promise<TableSchema> {
  const source = await tableSource(file);
  return withConnection(file, async (con) => {
    const cols = await schemaOf(con, source);
    const count = (await con.runAndReadAll(`SELECT count(*) FROM ${source.sql}`)).getRows()[0][0];
    const columns: TableSchemaColumn[] = cols.map((c) => ({ name: c.name, kind: kindOfDuckdbType(c.type), duckdbType: c.type }));
    return { file, format: source.format, rowCount: Number(count), columns };
  });
}

/** One column as readTable reads it: its DuckDB type, the kind it is read as and the SQL expression it is read through. */
export interface ColumnRead {
  name: string;
  type: string;
  kind: FeatureKind;
  expr: string;
}

/**
 * The columns readTable reads from `source`, in its order, each with the expression that gives its values
 * (numeric → DOUBLE, dates/timestamps as epoch seconds; categorical → VARCHAR; lists → INTEGER[] without
 * null elements, a null list empty), and readTable's errors for unknown or unreadable columns. Shared
 * with scorers that aggregate in SQL instead of reading the rows, so both see the same values.
 */
export async function planTableRead(
  con: DuckDBConnection,
  file: string,
  source: TableSource,
  options: ReadTableOptions = {},
): Promise<ColumnRead[]> {
  const opts = readTableOptionsSchema.parse(options);
  const all = await schemaOf(con, source);
  const byName = new Map(all.map((c) => [c.name, c]));
  for (const name of [...(opts.columns ?? []), ...Object.keys(opts.kinds ?? {})]) {
    if (!byName.has(name)) {
      throw new TableReadError(file, `unknown column '${name}' (available: ${all.map((c) => c.name).join(', ')})`);
    }
  }
  const wanted = opts.columns ? opts.columns.map((n) => byName.get(n)!) : all;
  const plan: ColumnRead[] = [];
  for (const c of wanted) {
    const detected = kindOfDuckdbType(c.type);
    const kind = opts.kinds?.[c.name] ?? detected;
    const col = quoteIdent(c.name);
    if (kind === 'unsupported') {
      if (opts.columns) throw new TableReadError(file, `column '${c.name}' has unsupported type ${c.type}`);
      continue;
    }
    if (kind === 'numeric') {
      if (detected !== 'numeric')
        throw new TableReadError(file, `column '${c.name}' of type ${c.type} cannot be read as numeric`);
      plan.push({
        name: c.name,
        type: c.type,
        kind,
        expr: TIME_TYPE.test(c.type) ? `epoch(${col})::DOUBLE` : `CAST(${col} AS DOUBLE)`,
      });
    } else if (kind === 'categorical') {
      if (detected === 'multi_id') throw new TableReadError(file, `list column '${c.name}' cannot be read as categorical`);
      plan.push({ name: c.name, type: c.type, kind, expr: `CAST(${col} AS VARCHAR)` });
    } else {
      if (detected !== 'multi_id')
        throw new TableReadError(file, `column '${c.name}' of type ${c.type} is not a list of integers`);
      plan.push({
        name: c.name,
        type: c.type,
        kind,
        expr: `coalesce(list_filter(CAST(${col} AS INTEGER[]), x -> x IS NOT NULL), []::INTEGER[])`,
      });
    }
  }
  return plan;
}

/**
 * Reads a CSV or Parquet file through DuckDB into typed columns: numeric → Float64Array (NaN = null),
 * categorical → dictionary codes (-1 = null), integer lists → CSR. Unsupported types are skipped unless
 * asked for by name (then an error). Row order is the file's (with `sampleRows`, a seeded sample's).
 */
export async function readTable(file: string, options: ReadTableOptions = {}): Promise<Table> {
  const opts = readTableOptionsSchema.parse(options);
  const source = await tableSource(file);
  return withConnection(file, async (con) => {
    const plan = await planTableRead(con, file, source, opts);
    const total = Number((await con.runAndReadAll(`SELECT count(*) FROM ${source.sql}`)).getRows()[0][0]);
    const sampled = opts.sampleRows !== undefined && total > opts.sampleRows;
    const rowCount = sampled ? opts.sampleRows! : total;
    // a seeded reservoir on one thread: the same rows every time
    if (sampled) await con.run('SET threads = 1');
    const from = sampled ? `(SELECT * FROM ${source.sql} USING SAMPLE reservoir(${rowCount} ROWS) REPEATABLE (7))` : source.sql;
    const builders = plan.map((p) => newBuilder(p.kind, rowCount));
    if (plan.length > 0) {
      const result = await con.stream(`SELECT ${plan.map((p, i) => `${p.expr} AS c${i}`).join(', ')} FROM ${from}`);
      let row = 0;
      for (;;) {
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        const n = chunk.rowCount;
        plan.forEach((_, ci) => builders[ci].append(chunk.getColumnVector(ci), row, n));
        row += n;
      }
      if (row !== rowCount) throw new TableReadError(file, `read ${row} rows, counted ${rowCount}`);
    }
    const columns: TableColumn[] = plan.map((p, i) => builders[i].finish(p.name, p.type));
    return { file, rowCount, columns };
  });
}

interface ColumnBuilder {
  append(vector: DuckDBVector, row: number, n: number): void;
  finish(name: string, type: string): TableColumn;
}

function newBuilder(kind: FeatureKind, rows: number): ColumnBuilder {
  if (kind === 'numeric') {
    const values = new Float64Array(rows);
    return {
      append(vector, row, n) {
        for (let i = 0; i < n; i++) {
          const v = vector.getItem(i);
          values[row + i] = typeof v === 'number' ? v : NaN;
        }
      },
      finish: (name, type) => ({ name, kind: 'numeric', duckdbType: type, values }),
    };
  }
  if (kind === 'categorical') {
    const codes = new Int32Array(rows);
    const dictionary: string[] = [];
    const index = new Map<string, number>();
    return {
      append(vector, row, n) {
        for (let i = 0; i < n; i++) {
          const v = vector.getItem(i);
          if (v === null) {
            codes[row + i] = -1;
            continue;
          }
          const s = String(v);
          let code = index.get(s);
          if (code === undefined) {
            code = dictionary.length;
            dictionary.push(s);
            index.set(s, code);
          }
          codes[row + i] = code;
        }
      },
      finish: (name, type) => ({ name, kind: 'categorical', duckdbType: type, codes, dictionary }),
    };
  }
  const offsets = new Int32Array(rows + 1);
  let ids = new Int32Array(Math.max(1024, rows));
  let length = 0;
  return {
    append(vector, row, n) {
      const list = vector as DuckDBListVector;
      const child = list.childVector;
      for (let i = 0; i < n; i++) {
        const start = list.getEntryOffset(i);
        const len = list.getEntryLength(i);
        if (length + len > ids.length) {
          const grown = new Int32Array(Math.max(ids.length * 2, length + len));
          grown.set(ids.subarray(0, length));
          ids = grown;
        }
        for (let k = 0; k < len; k++) ids[length++] = child.getItem(start + k) as number;
        offsets[row + i + 1] = length;
      }
    },
    finish: (name, type) => ({ name, kind: 'multi_id', duckdbType: type, offsets, ids: ids.slice(0, length) }),
  };
}
