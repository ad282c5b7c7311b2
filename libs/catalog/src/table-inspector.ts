import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { InvalidInputError } from '@abacus/core';
import type { ColumnSchema, LabelStats } from '@abacus/data';
import {
  describeTable,
  firstDuplicateName,
  kindOfDuckdbType,
  readCsvHeader,
  readParquetColumnNames,
  tableSource,
  TableReadError,
} from '@abacus/samples';

export interface InspectedTable {
  rowCount: number;
  columns: ColumnSchema[];
}

/** Limits of an import (configured: ABACUS_MAX_COLUMNS, ABACUS_MAX_CATEGORIES). */
export interface ImportLimits {
  maxColumns: number;
  maxCategories: number;
}

/** Column kinds follow the sample reader's mapping, so import and trials agree on what a column is. */
export const columnKind = (sourceType: string): ColumnSchema['kind'] => kindOfDuckdbType(sourceType);

const sql = (s: string) => `'${s.replace(/'/g, "''")}'`;
const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;
const FLOAT_TYPE = /^(FLOAT|DOUBLE|REAL)$/;
const NUMERIC_LABEL_TYPE =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL(\(\d+,\s*\d+\))?)$/;
const TEXT_TYPE = /^VARCHAR$/;

/**
 * Import-time checks of an uploaded CSV/Parquet file through DuckDB: header (duplicate names, column
 * count), schema, row count, non-finite numbers, categorical cardinality, label classes, time range;
 * and the conversion to Parquet so trials read one columnar format. CSV is read strictly (a ragged or
 * unparsable row is an error, never silently skipped). Messages name the uploaded file by the name the
 * client gave it, never by the server's path.
 */
/** Fields of one CSV line (RFC 4180 quoting: a delimiter inside quotes does not split). */
export function countFields(line: string, delimiter: string): number {
  let n = 1;
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (ch === '"')
      quoted = !quoted; // a doubled quote inside quotes toggles twice
    else if (ch === delimiter && !quoted) n++;
  }
  return n;
}

export class TableInspector {
  static formatOf(fileName: string): 'csv' | 'parquet' {
    const ext = path.extname(fileName).toLowerCase();
    if (ext === '.csv') return 'csv';
    if (ext === '.parquet' || ext === '.pq') return 'parquet';
    throw new InvalidInputError('file', `unsupported file type "${ext || fileName}" (expected .csv or .parquet)`);
  }

  /** The upload keeps a temporary name; DuckDB picks the reader by extension, so give it the right one. */
  private static async source(file: string): Promise<string> {
    return (await tableSource(file)).sql;
  }

  async withConnection<T>(
    fn: (run: (q: string) => Promise<unknown[][]>) => Promise<T>,
    opts: { singleThread?: boolean } = {},
  ): Promise<T> {
    const db = await DuckDBInstance.create(':memory:', opts.singleThread ? { threads: '1' } : {});
    const conn = await db.connect();
    try {
      return await fn(async (q) => (await conn.runAndReadAll(q)).getRows() as unknown[][]);
    } finally {
      conn.closeSync();
      db.closeSync();
    }
  }

  /**
   * Schema and row count, after the checks a reader would not make: an empty file, a Parquet file
   * without Parquet's magic bytes, repeated column names (DuckDB would rename them) and too many columns.
   */
  async inspect(file: string, displayName: string, limits: Pick<ImportLimits, 'maxColumns'>): Promise<InspectedTable> {
    const stat = fs.statSync(file, { throwIfNoEntry: false });
    if (!stat?.isFile()) throw new InvalidInputError('file', `${displayName}: file not found`);
    if (stat.size === 0) throw new InvalidInputError('file', `${displayName} is empty`);
    const format = path.extname(file).toLowerCase() === '.csv' ? 'CSV' : 'Parquet';
    try {
      let raw: string[];
      let delimiter = ',';
      if (format === 'Parquet') {
        if (!hasParquetMagic(file, stat.size)) {
          throw new InvalidInputError('file', `${displayName} is not a Parquet file (no PAR1 magic bytes)`);
        }
        raw = await readParquetColumnNames(file);
      } else {
        delimiter = (await tableSource(file)).delimiter ?? ',';
        raw = await readCsvHeader(file, delimiter);
      }
      if (raw.length > limits.maxColumns) {
        throw new InvalidInputError(
          'file',
          `${displayName} has ${raw.length} columns, more than the limit of ${limits.maxColumns} (ABACUS_MAX_COLUMNS)`,
        );
      }
      const dup = firstDuplicateName(raw);
      if (dup) {
        throw new InvalidInputError(
          'file',
          dup.name === dup.other
            ? `duplicate column name "${dup.name}" (columns ${dup.first} and ${dup.second})`
            : `column names "${dup.other}" and "${dup.name}" differ only in case (columns ${dup.first} and ${dup.second}); names must be unique ignoring case`,
        );
      }
      if (format === 'CSV') await this.checkFieldCounts(file, displayName, raw, delimiter);
      const schema = await describeTable(file);
      if (!schema.columns.length) throw new InvalidInputError('file', `${displayName} has no columns`);
      return {
        rowCount: schema.rowCount,
        columns: schema.columns.map((c) => ({ name: c.name, kind: c.kind, sourceType: c.duckdbType })),
      };
    } catch (err) {
      if (err instanceof InvalidInputError) throw err;
      const reason = err instanceof TableReadError ? err.reason : (err as Error).message;
      throw new InvalidInputError('file', `cannot read ${format} ${displayName}: ${scrub(reason, file, displayName)}`);
    }
  }

  /**
   * Every line of a CSV file has as many fields as its header: read as text with the header's columns
   * (no type detection, which on a ragged file takes the widest line for the header), the first line
   * that does not is reported by its line number and field count.
   */
  private async checkFieldCounts(file: string, displayName: string, header: string[], delimiter: string): Promise<void> {
    const columns = `{${header.map((n) => `${sql(n)}: 'VARCHAR'`).join(', ')}}`;
    try {
      await this.withConnection((run) =>
        run(
          `SELECT count(*) FROM read_csv(${sql(file)}, delim=${sql(delimiter)}, header=true, auto_detect=false, ` +
            `columns=${columns}, strict_mode=true, ignore_errors=false, null_padding=false)`,
        ),
      );
    } catch (err) {
      const msg = (err as Error).message;
      const m = /CSV Error on Line: (\d+)[\s\S]*?Expected Number of Columns: (\d+) Found: (\d+)/.exec(msg);
      if (m) {
        const [, line, expected] = m;
        // DuckDB stops counting at the first field too many: the line it quotes is counted here
        const original = /Original Line: (.*)/.exec(msg)?.[1];
        const found = original !== undefined ? countFields(original, delimiter) : Number(m[3]);
        throw new InvalidInputError(
          'file',
          `${displayName}: line ${line} has ${found} field(s) where the header has ${expected} (every line needs as many fields as the header)`,
        );
      }
      // anything else (quoting, encoding) is reported as the typed read reports it
    }
  }

  /** Per floating-point column: how many values are NaN or ±Infinity and the first data row (1-based) holding one. */
  async nonFinite(file: string, columns: ColumnSchema[]): Promise<{ column: string; count: number; firstRow: number }[]> {
    const floats = columns.filter((c) => FLOAT_TYPE.test(c.sourceType));
    if (!floats.length) return [];
    const src = await TableInspector.source(file);
    return this.withConnection(
      async (run) => {
        const aggs = floats.flatMap((c, i) => [
          `count(*) FILTER (WHERE NOT isfinite(${ident(c.name)})) AS n${i}`,
          `min(__row) FILTER (WHERE NOT isfinite(${ident(c.name)})) AS r${i}`,
        ]);
        // one thread: row_number() then follows the file's order
        const [row] = await run(`SELECT ${aggs.join(', ')} FROM (SELECT row_number() OVER () AS __row, * FROM ${src})`);
        return floats
          .map((c, i) => ({ column: c.name, count: Number(row[2 * i]), firstRow: Number(row[2 * i + 1]) }))
          .filter((x) => x.count > 0);
      },
      { singleThread: true },
    );
  }

  /** Text columns (other than `exempt`) with more distinct values than `limit` (HyperLogLog estimate: one pass, bounded memory). */
  async overCardinality(
    file: string,
    columns: ColumnSchema[],
    exempt: Set<string>,
    limit: number,
  ): Promise<{ column: string; distinct: number } | null> {
    const text = columns.filter((c) => TEXT_TYPE.test(c.sourceType) && !exempt.has(c.name));
    if (!text.length) return null;
    const src = await TableInspector.source(file);
    return this.withConnection(async (run) => {
      const [row] = await run(`SELECT ${text.map((c) => `approx_count_distinct(${ident(c.name)})`).join(', ')} FROM ${src}`);
      const i = row.findIndex((v) => Number(v) > limit);
      return i < 0 ? null : { column: text[i].name, distinct: Number(row[i]) };
    });
  }

  /**
   * The label rule: a numeric or boolean column without missing values holding exactly two classes,
   * 0/1 or false/true unless `positive` names the event value (label = value == positive).
   */
  async labelStats(file: string, column: ColumnSchema, positive: string | undefined): Promise<LabelStats> {
    const label = column.name;
    const isBool = column.sourceType === 'BOOLEAN';
    if (!isBool && !NUMERIC_LABEL_TYPE.test(column.sourceType)) {
      throw new InvalidInputError(
        'label',
        `column "${label}" has type ${column.sourceType}; a label must be numeric (0/1) or boolean (true/false)`,
      );
    }
    const src = await TableInspector.source(file);
    const c = ident(label);
    const value = isBool ? `CAST(${c} AS VARCHAR)` : `CASE WHEN isfinite(CAST(${c} AS DOUBLE)) THEN CAST(${c} AS DOUBLE) END`;
    const rows = await this.withConnection((run) =>
      run(`SELECT v, count(*) FROM (SELECT ${value} AS v FROM ${src}) GROUP BY v ORDER BY v NULLS LAST LIMIT 12`),
    );
    const missing = Number(rows.find((r) => r[0] === null)?.[1] ?? 0);
    const classes = rows
      .filter((r) => r[0] !== null)
      .map((r) => ({ value: isBool ? String(r[0]) : String(Number(r[0])), n: Number(r[1]) }));
    if (missing > 0) throw new InvalidInputError('label', `column "${label}" has ${missing} missing or non-finite value(s)`);
    if (classes.length !== 2) {
      const shown = classes.slice(0, 10).map((k) => k.value);
      throw new InvalidInputError(
        'label',
        `column "${label}" must have exactly 2 classes, found ${classes.length > 10 ? 'more than 10' : classes.length}${shown.length ? ` (${shown.join(', ')}${classes.length > 10 ? ', ...' : ''})` : ''}`,
      );
    }
    const values = classes.map((k) => k.value);
    let pos: string | undefined;
    if (positive !== undefined) {
      let wanted = positive.trim();
      if (isBool) {
        if (/^(yes|y|t|1|true)$/i.test(wanted)) wanted = 'true';
        else if (/^(no|n|f|0|false)$/i.test(wanted)) wanted = 'false';
      }
      pos = values.find((v) => v === wanted || (!isBool && wanted !== '' && Number(v) === Number(wanted)));
      if (pos === undefined) {
        throw new InvalidInputError(
          'positive',
          `"${positive}" is not a value of label "${label}" (values: ${values.join(', ')})`,
        );
      }
    } else {
      const binary = values.join() === '0,1' || values.join() === 'false,true';
      if (!binary) {
        throw new InvalidInputError(
          'label',
          `column "${label}" holds ${values.join(' and ')}; a label must be 0/1 or true/false, or name the event value with "positive" (e.g. positive=${values[1]}; CLI --positive ${values[1]})`,
        );
      }
      pos = values[1];
    }
    const events = classes.find((k) => k.value === pos)!.n;
    return {
      binary: true,
      classes: values,
      positive: pos,
      explicitPositive: positive !== undefined,
      events,
      nonEvents: classes.reduce((s, k) => s + k.n, 0) - events,
    };
  }

  async range(file: string, column: string): Promise<{ min: number; max: number }> {
    const src = await TableInspector.source(file);
    return this.withConnection(async (run) => {
      const c = ident(column);
      const [[min, max]] = await run(`SELECT min(epoch(${c}::TIMESTAMP)), max(epoch(${c}::TIMESTAMP)) FROM ${src}`).catch(() =>
        run(`SELECT min(${c})::DOUBLE, max(${c})::DOUBLE FROM ${src}`),
      );
      return { min: Number(min), max: Number(max) };
    });
  }

  /** Writes the table as Parquet; `nullNonFinite` columns get NaN / ±Infinity stored as missing. */
  async toParquet(file: string, out: string, nullNonFinite: string[] = []): Promise<void> {
    const src = await TableInspector.source(file);
    const replace = nullNonFinite.length
      ? ` REPLACE (${nullNonFinite.map((c) => `CASE WHEN isfinite(${ident(c)}) THEN ${ident(c)} END AS ${ident(c)}`).join(', ')})`
      : '';
    await this.withConnection(async (run) => {
      await run(`COPY (SELECT *${replace} FROM ${src}) TO ${sql(out)} (FORMAT parquet, COMPRESSION zstd)`);
    });
  }
}

function hasParquetMagic(file: string, size: number): boolean {
  if (size < 12) return false;
  const fd = fs.openSync(file, 'r');
  try {
    const head = Buffer.alloc(4);
    const tail = Buffer.alloc(4);
    fs.readSync(fd, head, 0, 4, 0);
    fs.readSync(fd, tail, 0, 4, size - 4);
    return head.toString('latin1') === 'PAR1' && tail.toString('latin1') === 'PAR1';
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A reader's message as the client may see it: the SQL echo dropped, the server's path of the upload
 * replaced by the client's file name, and any other absolute path removed.
 */
export function scrub(reason: string, file: string, displayName: string): string {
  const text = reason.split(/\nLINE \d+:/)[0];
  return text
    .split(file)
    .join(displayName)
    .split(path.dirname(file))
    .join('')
    .replace(/(^|[\s'"(=])\/(?:[^\s'"/),:]+\/)*[^\s'"/),:]*/g, '$1<path>')
    .split('\n')
    .slice(0, 3)
    .join(' ')
    .trim();
}
