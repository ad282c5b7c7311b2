import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { InvalidInputError } from '@abacus/core';
import type { ColumnSchema } from '@abacus/data';
import { kindOfDuckdbType } from '@abacus/samples';

export interface InspectedTable {
  rowCount: number;
  columns: ColumnSchema[];
}

/** Column kinds follow the sample reader's mapping, so import and trials agree on what a column is. */
export const columnKind = (sourceType: string): ColumnSchema['kind'] => kindOfDuckdbType(sourceType);

const sql = (s: string) => `'${s.replace(/'/g, "''")}'`;
const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

/**
 * Import-time checks of an uploaded CSV/Parquet file through DuckDB: schema, row count, label
 * classes, time range; and the conversion of CSV to Parquet so trials read one columnar format.
 * CSV is read strictly (a ragged or unparsable row is an error, never silently skipped).
 */
export class TableInspector {
  static formatOf(fileName: string): 'csv' | 'parquet' {
    const ext = path.extname(fileName).toLowerCase();
    if (ext === '.csv') return 'csv';
    if (ext === '.parquet' || ext === '.pq') return 'parquet';
    throw new InvalidInputError('file', `unsupported file type "${ext || fileName}" (expected .csv or .parquet)`);
  }

  private static source(file: string, format: 'csv' | 'parquet'): string {
    return format === 'csv'
      ? `read_csv(${sql(file)}, header = true, auto_detect = true, strict_mode = true, ignore_errors = false, null_padding = false)`
      : `read_parquet(${sql(file)})`;
  }

  async withConnection<T>(fn: (run: (q: string) => Promise<unknown[][]>) => Promise<T>): Promise<T> {
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    try {
      return await fn(async (q) => (await conn.runAndReadAll(q)).getRows() as unknown[][]);
    } finally {
      conn.closeSync();
      db.closeSync();
    }
  }

  async inspect(file: string, format: 'csv' | 'parquet'): Promise<InspectedTable> {
    if (!fs.existsSync(file)) throw new InvalidInputError('file', `file not found: ${path.basename(file)}`);
    return this.withConnection(async (run) => {
      try {
        const src = TableInspector.source(file, format);
        const desc = await run(`DESCRIBE SELECT * FROM ${src}`);
        const columns = desc.map((r) => ({
          name: String(r[0]),
          sourceType: String(r[1]),
          kind: columnKind(String(r[1])),
        }));
        const [[count]] = await run(`SELECT count(*) FROM ${src}`);
        if (!columns.length) throw new Error('the file has no columns');
        return { rowCount: Number(count), columns };
      } catch (err) {
        if (err instanceof InvalidInputError) throw err;
        throw new InvalidInputError('file', `cannot read ${format.toUpperCase()}: ${firstLine((err as Error).message)}`);
      }
    });
  }

  /** Distinct values of the label (at most 3 are fetched: more than 2 is already an error). */
  async labelClasses(file: string, format: 'csv' | 'parquet', label: string): Promise<string[]> {
    return this.withConnection(async (run) => {
      const rows = await run(
        `SELECT DISTINCT CAST(${ident(label)} AS VARCHAR) FROM ${TableInspector.source(file, format)} WHERE ${ident(label)} IS NOT NULL LIMIT 3`,
      );
      return rows.map((r) => String(r[0])).sort();
    });
  }

  async range(file: string, format: 'csv' | 'parquet', column: string): Promise<{ min: number; max: number }> {
    return this.withConnection(async (run) => {
      const c = ident(column);
      const [[min, max]] = await run(
        `SELECT min(epoch(${c}::TIMESTAMP)), max(epoch(${c}::TIMESTAMP)) FROM ${TableInspector.source(file, format)}`,
      ).catch(() =>
        run(`SELECT min(${c})::DOUBLE, max(${c})::DOUBLE FROM ${TableInspector.source(file, format)}`),
      );
      return { min: Number(min), max: Number(max) };
    });
  }

  async toParquet(file: string, format: 'csv' | 'parquet', out: string): Promise<void> {
    await this.withConnection(async (run) => {
      await run(`COPY (SELECT * FROM ${TableInspector.source(file, format)}) TO ${sql(out)} (FORMAT parquet, COMPRESSION zstd)`);
    });
  }
}

function firstLine(s: string): string {
  return s.split('\n').slice(0, 3).join(' ').trim();
}
