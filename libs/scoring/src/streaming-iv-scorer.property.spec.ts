import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTable } from '@abacus/samples';
import { scoreTableAsync } from './iv-scorer';
import type { ScoreTableOptions } from './score-table-options.schema';
import { scoreFileStreaming } from './streaming-iv-scorer';

/** A generated column: its SQL type and one SQL literal per row. */
interface GenColumn {
  name: string;
  type: string;
  cells: string[];
}

const dbl = (x: number) => (Number.isNaN(x) ? `'NaN'::DOUBLE` : `CAST('${String(x)}' AS DOUBLE)`);
const str = (s: string) => `'${s.replace(/'/g, "''")}'`;
const orNull = <T>(arb: fc.Arbitrary<T>, freq = 6) => fc.option(arb, { freq });

const numericDoubles = fc.oneof(
  fc.integer({ min: -5, max: 5 }),
  fc.double({ noNaN: false }),
  fc.constantFrom(0, -0, Infinity, -Infinity, NaN, 0.1, 1e-300),
  fc.double({ min: -100, max: 100, noNaN: true }),
);

/** a column of one of the kinds the reader sees, with nulls, NaN, ties, constants, lists */
const featureColumn = (rows: number, name: string): fc.Arbitrary<GenColumn> =>
  fc.oneof(
    // doubles with duplicates: values drawn from a small pool
    fc
      .array(numericDoubles, { minLength: 1, maxLength: 12 })
      .chain((pool) => fc.array(orNull(fc.constantFrom(...pool)), { minLength: rows, maxLength: rows }))
      .map((vs) => ({ name, type: 'DOUBLE', cells: vs.map((v) => (v === null ? 'NULL' : dbl(v))) })),
    // many distinct doubles
    fc
      .array(orNull(fc.double({ noNaN: false })), { minLength: rows, maxLength: rows })
      .map((vs) => ({ name, type: 'DOUBLE', cells: vs.map((v) => (v === null ? 'NULL' : dbl(v))) })),
    // small integers (BIGINT read as numeric), or one constant
    fc
      .array(orNull(fc.integer({ min: -3, max: 40 })), { minLength: rows, maxLength: rows })
      .map((vs) => ({ name, type: 'BIGINT', cells: vs.map((v) => (v === null ? 'NULL' : String(v))) })),
    fc.integer({ min: -2, max: 2 }).map((v) => ({ name, type: 'INTEGER', cells: Array<string>(rows).fill(String(v)) })),
    // strings: digits (sorted as text), astral and high BMP characters (UTF-16 vs UTF-8 order), quotes
    fc
      .array(orNull(fc.constantFrom('a', 'b', '10', '2', 'Z', 'é', '😀', '\uffff', "o'k", ''), 5), {
        minLength: rows,
        maxLength: rows,
      })
      .map((vs) => ({ name, type: 'VARCHAR', cells: vs.map((v) => (v === null ? 'NULL' : str(v))) })),
    fc
      .array(orNull(fc.boolean()), { minLength: rows, maxLength: rows })
      .map((vs) => ({ name, type: 'BOOLEAN', cells: vs.map((v) => (v === null ? 'NULL' : String(v))) })),
    // id lists: null lists, empty lists, null elements, repeated ids
    fc
      .array(orNull(fc.array(orNull(fc.integer({ min: -2, max: 12 }), 8), { maxLength: 5 }), 8), {
        minLength: rows,
        maxLength: rows,
      })
      .map((vs) => ({
        name,
        type: 'INTEGER[]',
        cells: vs.map((v) =>
          v === null ? 'NULL' : `[${v.map((x) => (x === null ? 'NULL' : String(x))).join(', ')}]::INTEGER[]`,
        ),
      })),
  );

/** labels: 0/1, yes/no strings or booleans; now and then a null or a third class (the errors must match too) */
const labelColumn = (rows: number): fc.Arbitrary<{ col: GenColumn; positive?: string | number | boolean }> =>
  fc.oneof(
    fc
      .array(fc.oneof({ weight: 40, arbitrary: fc.constantFrom(0, 1) }, { weight: 1, arbitrary: fc.constantFrom(2, null) }), {
        minLength: rows,
        maxLength: rows,
      })
      .map((vs) => ({ col: { name: 'label', type: 'DOUBLE', cells: vs.map((v) => (v === null ? 'NULL' : String(v))) } })),
    fc.array(fc.constantFrom('yes', 'no'), { minLength: rows, maxLength: rows }).map((vs) => ({
      col: { name: 'label', type: 'VARCHAR', cells: vs.map(str) },
      positive: 'yes',
    })),
    fc.array(fc.boolean(), { minLength: rows, maxLength: rows }).map((vs) => ({
      col: { name: 'label', type: 'BOOLEAN', cells: vs.map(String) },
    })),
  );

/** an optional time column (numbers or timestamps, some null) and where the test range starts */
const timeSplit = (rows: number) =>
  fc.option(
    fc.oneof(
      fc
        .tuple(
          fc.array(orNull(fc.integer({ min: 0, max: 9 }), 10), { minLength: rows, maxLength: rows }),
          fc.integer({ min: 0, max: 10 }),
        )
        .map(([ts, from]) => ({
          col: { name: 't', type: 'INTEGER', cells: ts.map((t) => (t === null ? 'NULL' : String(t))) },
          testFrom: from as number | string,
        })),
      fc
        .tuple(
          fc.array(orNull(fc.integer({ min: 0, max: 9 }), 10), { minLength: rows, maxLength: rows }),
          fc.integer({ min: 1, max: 9 }),
        )
        .map(([ts, from]) => ({
          col: {
            name: 't',
            type: 'TIMESTAMP',
            cells: ts.map((t) => (t === null ? 'NULL' : `TIMESTAMP '2024-01-01' + INTERVAL ${t} DAY + INTERVAL ${t * 7} MINUTE`)),
          },
          testFrom: `2024-01-${String(from + 1).padStart(2, '0')}T00:00:00Z` as number | string,
        })),
    ),
    { freq: 2 },
  );

const binning = fc.record({
  prebins: fc.integer({ min: 2, max: 30 }),
  maxBins: fc.integer({ min: 2, max: 12 }),
  minBinShare: fc.double({ min: 0, max: 0.3, noNaN: true }),
  minCategoryShare: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.3, noNaN: true })),
  minIdShare: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.3, noNaN: true })),
  smoothing: fc.double({ min: 0.01, max: 5, noNaN: true }),
});

const tables = fc.integer({ min: 1, max: 150 }).chain((rows) =>
  fc.record({
    label: labelColumn(rows),
    time: timeSplit(rows),
    features: fc
      .integer({ min: 1, max: 4 })
      .chain((k) => fc.tuple(...Array.from({ length: k }, (_, i) => featureColumn(rows, `f${i}`)))),
    binning,
    format: fc.constantFrom('parquet', 'parquet', 'parquet', 'csv'),
    cutStrategy: fc.constantFrom('auto', 'distinct', 'rank') as fc.Arbitrary<'auto' | 'distinct' | 'rank'>,
  }),
);

let dir = '';
let instance: DuckDBInstance;
let con: DuckDBConnection;
let seq = 0;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'abacus-stream-score-'));
  instance = await DuckDBInstance.create(':memory:');
  con = await instance.connect();
});

afterAll(async () => {
  con?.closeSync();
  instance?.closeSync();
  await rm(dir, { recursive: true, force: true });
});

async function writeTable(columns: GenColumn[], format: 'parquet' | 'csv'): Promise<string> {
  const file = path.join(dir, `t${seq++}.${format}`);
  const rows = columns[0].cells.map((_, r) => `(${columns.map((c) => `CAST(${c.cells[r]} AS ${c.type})`).join(', ')})`);
  const names = columns.map((c) => `"${c.name}"`).join(', ');
  await con.run(
    `COPY (SELECT * FROM (VALUES ${rows.join(', ')}) AS t(${names})) TO '${file}' (FORMAT ${format}${format === 'csv' ? ', HEADER' : ''})`,
  );
  return file;
}

/** the report, or the error (name and message) */
async function outcome<T>(run: () => Promise<T>): Promise<T | { error: string }> {
  try {
    return await run();
  } catch (err) {
    return { error: `${(err as Error).name}: ${(err as Error).message}` };
  }
}

describe('scoreFileStreaming (property-based)', () => {
  it('gives the in-memory report (or its error) for random tables', async () => {
    let reports = 0;
    await fc.assert(
      fc.asyncProperty(tables, async (t) => {
        const columns = [t.label.col, ...(t.time ? [t.time.col] : []), ...t.features];
        const file = await writeTable(columns, t.format);
        const options: ScoreTableOptions = {
          label: 'label',
          ...(t.label.positive !== undefined ? { positive: t.label.positive } : {}),
          ...(t.time ? { time: 't', testFrom: t.time.testFrom } : {}),
          ...t.binning,
        };
        const names = columns.map((c) => c.name);
        const inMemory = await outcome(async () => scoreTableAsync(await readTable(file, { columns: names }), options));
        const streamed = await outcome(
          async () =>
            (
              await scoreFileStreaming(file, options, {
                columns: names,
                memoryLimitMb: 64,
                threads: 1,
                tempDir: dir,
                cutStrategy: t.cutStrategy,
              })
            ).report,
        );
        expect(streamed).toEqual(inMemory);
        if (!('error' in inMemory)) reports++;
        await rm(file, { force: true });
      }),
      { numRuns: 120 },
    );
    // most runs reach a report, not an error
    expect(reports).toBeGreaterThan(60);
  }, 60_000);
});
