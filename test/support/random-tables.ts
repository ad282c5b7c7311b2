import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Prng } from '@abacus/samples';

export type ColumnKind = 'numeric' | 'integer' | 'categorical' | 'multi_id';

export interface RandomColumn {
  name: string;
  kind: ColumnKind;
  /** distinct values (categorical / multi_id / integer) */
  cardinality: number;
  /** fraction of rows left empty */
  missing: number;
  /** weight in the click logit (0 = pure noise) */
  effect: number;
}

/** The shape of one generated table, recorded so a failure names exactly what broke. */
export interface RandomTableShape {
  seed: number;
  rows: number;
  format: 'csv' | 'parquet';
  columns: RandomColumn[];
  time: boolean;
  keys: string[];
  baseRate: number;
}

export interface RandomTable {
  shape: RandomTableShape;
  file: string;
  label: string;
  features: string[];
}

const CARDINALITIES = [2, 3, 7, 30, 200, 2_000, 50_000];

/**
 * A flat labelled table of a random shape: row count (log-uniform), numeric / integer / categorical
 * / multi-id columns of varied cardinality, missing values, optionally a time column and key
 * columns, a click label driven by some columns and not others. Some shapes have no numeric column
 * at all, or no categorical one, or a single feature: the cases that broke before.
 */
export function randomShape(seed: number, opts: { minRows?: number; maxRows?: number } = {}): RandomTableShape {
  const r = new Prng(seed * 7919 + 17);
  const minRows = opts.minRows ?? 1_500;
  const maxRows = opts.maxRows ?? 20_000;
  const rows = Math.round(Math.exp(Math.log(minRows) + r.next() * (Math.log(maxRows) - Math.log(minRows))));
  const pick = <T>(xs: T[]) => xs[Math.floor(r.next() * xs.length)]!;
  // every fourth table one kind only, so "no numeric inputs" and "no slots" come up often
  const only = seed % 4 === 1 ? pick<ColumnKind>(['numeric', 'categorical']) : null;
  const kinds: ColumnKind[] = ['numeric', 'integer', 'categorical', 'multi_id'];
  const count = 2 + Math.floor(r.next() * 9);
  const columns: RandomColumn[] = [];
  for (let i = 0; i < count; i++) {
    const kind = only ?? pick(kinds);
    columns.push({
      name: `${kind === 'multi_id' ? 'm' : kind === 'categorical' ? 'c' : kind === 'integer' ? 'i' : 'x'}${String(i).padStart(2, '0')}`,
      kind,
      cardinality: kind === 'numeric' ? 0 : Math.min(pick(CARDINALITIES), kind === 'integer' ? 1_000_000 : rows),
      missing: r.next() < 0.4 ? r.next() * 0.3 : 0,
      effect: r.next() < 0.5 ? 0 : 0.3 + r.next() * 1.2,
    });
  }
  const hasMulti = columns.some((c) => c.kind === 'multi_id');
  return {
    seed,
    rows,
    // lists need Parquet; otherwise half the tables are CSV
    format: hasMulti || r.next() < 0.5 ? 'parquet' : 'csv',
    columns,
    time: r.next() < 0.5,
    keys: r.next() < 0.5 ? ['user_id'] : [],
    baseRate: 0.05 + r.next() * 0.4,
  };
}

/** Writes the table (CSV directly; Parquet through DuckDB so lists are real LIST columns). */
export async function writeRandomTable(shape: RandomTableShape, dir: string): Promise<RandomTable> {
  const r = new Prng(shape.seed * 104729 + 3);
  fs.mkdirSync(dir, { recursive: true });
  const header = [...(shape.time ? ['ts'] : []), ...shape.keys, ...shape.columns.map((c) => c.name), 'clicked'];
  const lines = [header.join(',')];
  // per-category effects, fixed per column
  const catEffect = shape.columns.map((c) => Float64Array.from({ length: Math.max(1, c.cardinality) }, () => r.normal()));
  const intercept = Math.log(shape.baseRate / (1 - shape.baseRate));
  for (let i = 0; i < shape.rows; i++) {
    const cells: string[] = [];
    if (shape.time) cells.push(String(1_700_000_000 + i * 60 + Math.floor(r.next() * 60)));
    for (const _ of shape.keys) cells.push(String(Math.floor(r.next() * Math.max(10, shape.rows / 5))));
    let logit = intercept;
    shape.columns.forEach((c, j) => {
      if (r.next() < c.missing) {
        cells.push('');
        return;
      }
      if (c.kind === 'numeric') {
        const v = r.normal();
        logit += c.effect * v;
        cells.push(v.toFixed(4));
      } else if (c.kind === 'integer') {
        const v = Math.floor(r.next() * c.cardinality);
        logit += (c.effect * (v - c.cardinality / 2)) / Math.max(1, c.cardinality);
        cells.push(String(v));
      } else if (c.kind === 'categorical') {
        const v = Math.floor(r.next() * c.cardinality);
        logit += c.effect * catEffect[j]![v]!;
        cells.push(`v${v}`);
      } else {
        const len = Math.floor(r.next() * 4);
        const ids = Array.from({ length: len }, () => Math.floor(r.next() * c.cardinality));
        for (const id of ids) logit += (c.effect * catEffect[j]![id]!) / Math.max(1, len);
        cells.push(ids.join('|'));
      }
    });
    cells.push(r.next() < 1 / (1 + Math.exp(-logit)) ? '1' : '0');
    lines.push(cells.join(','));
  }
  const csv = path.join(dir, `table-${shape.seed}.csv`);
  fs.writeFileSync(csv, `${lines.join('\n')}\n`);
  let file = csv;
  if (shape.format === 'parquet') {
    file = path.join(dir, `table-${shape.seed}.parquet`);
    // read_csv's columns map must follow the file's column order
    const typeOf = (h: string) => {
      const c = shape.columns.find((x) => x.name === h);
      if (!c) return h === 'clicked' ? 'INTEGER' : 'BIGINT';
      return c.kind === 'numeric' ? 'DOUBLE' : c.kind === 'integer' ? 'BIGINT' : 'VARCHAR';
    };
    const types = Object.fromEntries(header.map((h) => [h, typeOf(h)]));
    const select = header
      .map((h) => {
        const c = shape.columns.find((x) => x.name === h);
        const q = `"${h}"`;
        return c?.kind === 'multi_id'
          ? `CASE WHEN ${q} IS NULL OR ${q} = '' THEN []::INTEGER[] ELSE string_split(${q}, '|')::INTEGER[] END AS ${q}`
          : q;
      })
      .join(', ');
    const cols = Object.entries(types)
      .map(([k, t]) => `'${k}': '${t}'`)
      .join(', ');
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    try {
      await conn.run(
        `COPY (SELECT ${select} FROM read_csv('${csv}', header = true, columns = {${cols}})) TO '${file}' (FORMAT parquet)`,
      );
    } finally {
      conn.closeSync();
      db.closeSync();
    }
    fs.rmSync(csv);
  }
  return { shape, file, label: 'clicked', features: shape.columns.map((c) => c.name) };
}

/** One line per table for failure messages. */
export function describeShape(s: RandomTableShape): string {
  const cols = s.columns.map(
    (c) =>
      `${c.name}(${c.kind}${c.cardinality ? `/${c.cardinality}` : ''}${c.missing ? `, ${Math.round(c.missing * 100)}% missing` : ''})`,
  );
  return `seed ${s.seed}: ${s.rows} rows, ${s.format}${s.time ? ', time' : ''}${s.keys.length ? `, keys ${s.keys}` : ''}, base rate ${s.baseRate.toFixed(2)}; ${cols.join(' ')}`;
}
