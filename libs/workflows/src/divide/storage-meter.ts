import { DuckDBInstance } from '@duckdb/node-api';
import type { FeatureKind } from '@abacus/data';
import { bytesPerValue, type ColumnStats } from './cost-rules';

const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

/** A column to measure in one file set (a feature table's or a sample set's Parquet files). */
export interface ColumnToMeasure {
  column: string;
  kind: FeatureKind;
  /** the stored type (ColumnSchema.sourceType) */
  sourceType: string;
}

export interface StorageMeasurement {
  bytes: number;
  stats: ColumnStats;
  how: string;
}

const fmt = (x: number, digits = 1) =>
  x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/**
 * Storage of columns of one table, by DuckDB over its stored Parquet files: per column the row count,
 * the non-null count, the mean UTF-8 length of text values, the mean list length of multi-id lists
 * (a missing list counts as empty) and an approximate distinct count; the bytes per value follow
 * `bytesPerValue`.
 */
export async function measureStorage(
  files: string[],
  tableLabel: string,
  columns: ColumnToMeasure[],
): Promise<Map<string, StorageMeasurement>> {
  const out = new Map<string, StorageMeasurement>();
  if (!columns.length) return out;
  const src = `read_parquet([${files.map(lit).join(', ')}])`;
  const db = await DuckDBInstance.create(':memory:', { threads: '1' });
  const conn = await db.connect();
  try {
    const q = async (sql: string) => (await conn.runAndReadAll(sql)).getRows() as unknown[][];
    for (const c of columns) {
      const col = ident(c.column);
      let stats: ColumnStats;
      if (c.kind === 'multi_id') {
        const [row] = await q(`SELECT count(*), count(${col}), avg(coalesce(len(${col}), 0)) FROM ${src}`);
        const [d] = await q(`SELECT approx_count_distinct(x) FROM (SELECT unnest(${col}) AS x FROM ${src})`);
        stats = {
          rows: Number(row![0]),
          nonNull: Number(row![1]),
          meanListLength: Number(row![2] ?? 0),
          distinct: Number(d![0] ?? 0),
        };
      } else {
        const text = c.kind === 'categorical' && /^(VARCHAR|TEXT|STRING|CHAR|BPCHAR)/i.test(c.sourceType.trim());
        const [row] = await q(
          `SELECT count(*), count(${col}), ${text ? `avg(strlen(${col}))` : 'NULL'}, ${
            c.kind === 'categorical' ? `approx_count_distinct(${col})` : 'NULL'
          } FROM ${src}`,
        );
        stats = {
          rows: Number(row![0]),
          nonNull: Number(row![1]),
          ...(text ? { meanTextBytes: Number(row![2] ?? 0) } : {}),
          ...(c.kind === 'categorical' ? { distinct: Number(row![3] ?? 0) } : {}),
        };
      }
      const bytes = bytesPerValue(c.kind, c.sourceType, stats);
      const over = `over ${stats.rows.toLocaleString('en-US')} rows of table ${tableLabel}`;
      const how =
        c.kind === 'numeric'
          ? `numeric: 4 bytes (float32) per value ${over}`
          : c.kind === 'multi_id'
            ? `multi-id: 4 + 4 × mean list length ${fmt(stats.meanListLength ?? 0, 2)} = ${fmt(bytes, 2)} bytes ${over}`
            : stats.meanTextBytes !== undefined
              ? `categorical text: mean ${fmt(bytes)} bytes (UTF-8) ${over}`
              : `categorical id: 4 bytes (int32) per value ${over}`;
      out.set(c.column, { bytes, stats, how });
    }
  } finally {
    conn.closeSync();
    db.closeSync();
  }
  return out;
}
