import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { InvalidInputError } from '@abacus/core';
import type { ColumnSchema } from '@abacus/data';
import { describeTable, kindOfDuckdbType, tableSource, TableReadError } from '@abacus/samples';

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

  /** The upload keeps a temporary name; DuckDB picks the reader by extension, so give it the right one. */
  private static async source(file: string): Promise<string> {
    return (await tableSource(file)).sql;
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

  async inspect(file: string): Promise<InspectedTable> {
    if (!fs.existsSync(file)) throw new InvalidInputError('file', `file not found: ${path.basename(file)}`);
    try {
      const schema = await describeTable(file);
      if (!schema.columns.length) throw new InvalidInputError('file', 'the file has no columns');
      return {
        rowCount: schema.rowCount,
        columns: schema.columns.map((c) => ({ name: c.name, kind: c.kind, sourceType: c.duckdbType })),
      };
    } catch (err) {
      if (err instanceof InvalidInputError) throw err;
      const format = path.extname(file).toLowerCase() === '.csv' ? 'CSV' : 'Parquet';
      const reason = err instanceof TableReadError ? err.reason : (err as Error).message;
      throw new InvalidInputError('file', `cannot read ${format}: ${firstLine(reason)}`);
    }
  }

  /** Distinct values of the label (at most 3 are fetched: more than 2 is already an error). */
  async labelClasses(file: string, label: string): Promise<string[]> {
    return this.withConnection(async (run) => {
      const rows = await run(
        `SELECT DISTINCT CAST(${ident(label)} AS VARCHAR) FROM ${await TableInspector.source(file)} WHERE ${ident(label)} IS NOT NULL LIMIT 3`,
      );
      return rows.map((r) => String(r[0])).sort();
    });
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

  async toParquet(file: string, out: string): Promise<void> {
    const src = await TableInspector.source(file);
    await this.withConnection(async (run) => {
      await run(`COPY (SELECT * FROM ${src}) TO ${sql(out)} (FORMAT parquet, COMPRESSION zstd)`);
    });
  }
}

function firstLine(s: string): string {
  return s.split('\n').slice(0, 3).join(' ').trim();
}
