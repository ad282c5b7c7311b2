import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNION_DOMAIN, UNION_TIME, validationRowCount, writeSampleUnion } from './sample-union';

let dir: string;
const f = (name: string): string => path.join(dir, name);

async function query<T extends unknown[]>(sql: string): Promise<T[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  try {
    return (await con.runAndReadAll(sql)).getRows() as T[];
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'abacus-union-'));
  // target: 12 rows written out of time order, two of them at ts 9 and none at 10; before ts 11: 10 rows
  await query(
    `COPY (SELECT * FROM (VALUES (3, 0, 'a'), (1, 1, 'b'), (9, 1, 'c'), (2, 0, 'a'), (9, 0, 'd'), (4, 1, 'b'),
        (5, 0, 'a'), (6, 1, 'c'), (12, 1, 'a'), (7, 0, 'b'), (11, 0, 'c'), (8, 1, 'a')) t(ts, click, x))
      TO '${f('target.parquet')}' (FORMAT parquet)`,
  );
  // a source over the whole range, one row per ts 1..14
  await query(
    `COPY (SELECT i AS ts, i % 2 AS click, 'y' AS x FROM range(1, 15) r(i)) TO '${f('source.parquet')}' (FORMAT parquet)`,
  );
}, 60_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const parts = () => [
  { domain: 'target', file: f('target.parquet'), label: 'click', time: 'ts' },
  { domain: 'feed/s', file: f('source.parquet'), label: 'click', time: 'ts' },
];

describe('validationRowCount', () => {
  it('is the carve of the workflows: round(n × share), at least 1 and at most n − 1, none under 2 rows', () => {
    expect([0, 1, 2, 3, 10, 11, 12, 1000].map((n) => validationRowCount(n, 0.2))).toEqual([0, 0, 1, 1, 2, 2, 2, 200]);
    expect(validationRowCount(100, 0)).toBe(0);
  });
});

describe('writeSampleUnion', () => {
  it('drops borrowed rows at or after the target validation start; the target keeps all its rows', async () => {
    const out = f('u1/samples.parquet');
    const r = await writeSampleUnion({ parts: parts(), columns: ['x'], testFrom: 11, validationShare: 0.2 }, out);
    // 10 target training rows (ts 1..8, 9, 9) → the last round(10 × 0.2) = 2: the two rows at ts 9
    const [[n]] = await query<[bigint]>(`SELECT count(*) FROM '${f('target.parquet')}' WHERE ts < 11`);
    expect(Number(n)).toBe(10);
    expect(r.validation).toEqual({ from: 9, rows: 2 });
    const [target, source] = r.parts;
    expect(target).toMatchObject({ rows: 12, kept: 12, droppedAtOrAfterTestStart: 0, droppedAtOrAfterValidationStart: 0 });
    // source ts 9, 10 dropped at the validation start; 11..14 at the test start
    expect(source).toMatchObject({
      rows: 14,
      droppedAtOrAfterTestStart: 4,
      droppedAtOrAfterValidationStart: 2,
      duplicatesDropped: 0,
      kept: 8,
    });
    // label rates stay those before the test start
    expect(source.labelRate).toBeCloseTo(5 / 10, 12);
    const rows = await query<[number, string]>(`SELECT ${UNION_TIME}, ${UNION_DOMAIN} FROM '${out}'`);
    expect(rows.filter((x) => x[1] === 'target')).toHaveLength(12);
    expect(rows.filter((x) => x[1] === 'feed/s').map((x) => x[0])).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // every borrowed row lies before every target validation row
    expect(Math.max(...rows.filter((x) => x[1] !== 'target').map((x) => x[0]))).toBeLessThan(r.validation.from);
  });

  it('with ties at the start, the validation rows are the last ones in (time, file row) order', async () => {
    const r = await writeSampleUnion(
      { parts: parts(), columns: ['x'], testFrom: 10, validationShare: 0.2 },
      f('u2/samples.parquet'),
    );
    // the same 10 training rows before ts 10: round(10 × 0.2) = 2 → the two rows at ts 9
    expect(r.validation).toEqual({ from: 9, rows: 2 });
    const r3 = await writeSampleUnion(
      { parts: parts(), columns: ['x'], testFrom: 10, validationShare: 0.1 },
      f('u3/samples.parquet'),
    );
    // round(10 × 0.1) = 1 row: the second ts-9 row in file order; the first is fitted on, the borrowed ts-9 row dropped
    expect(r3.validation).toEqual({ from: 9, rows: 1 });
    expect(r3.parts[1]).toMatchObject({ droppedAtOrAfterValidationStart: 1, droppedAtOrAfterTestStart: 5, kept: 8 });
  });

  it('without a validation share only the test start drops rows', async () => {
    const r = await writeSampleUnion({ parts: parts(), columns: ['x'], testFrom: 11 }, f('u4/samples.parquet'));
    expect(r.validation).toEqual({ from: 11, rows: 0 });
    expect(r.parts[1]).toMatchObject({ droppedAtOrAfterTestStart: 4, droppedAtOrAfterValidationStart: 0, kept: 10 });
  });

  it('reads a set registered by reference (a folder of Parquet files, partition folders kept) as the same rows in the same order', async () => {
    // the target split over three files in two hive partitions, rows in file order as one file
    for (const [k, [from, to]] of [
      [0, 4],
      [4, 9],
      [9, 12],
    ].entries()) {
      await mkdir(f(`ref/part=${k < 2 ? 'a' : 'b'}`), { recursive: true });
      await query(
        `COPY (SELECT ts, click, x FROM read_parquet('${f('target.parquet')}', file_row_number = true)
            WHERE file_row_number >= ${from} AND file_row_number < ${to} ORDER BY file_row_number)
          TO '${f(`ref/part=${k < 2 ? 'a' : 'b'}/f${k}.parquet`)}' (FORMAT parquet)`,
      );
    }
    const one = await writeSampleUnion(
      { parts: parts(), columns: ['x'], testFrom: 10, validationShare: 0.1 },
      f('u5/samples.parquet'),
    );
    const folder = await writeSampleUnion(
      { parts: [{ ...parts()[0], file: f('ref') }, parts()[1]], columns: ['x'], testFrom: 10, validationShare: 0.1 },
      f('u6/samples.parquet'),
    );
    expect(folder).toEqual(one);
    const rows = (file: string) => query(`SELECT * FROM '${file}'`);
    expect(await rows(f('u6/samples.parquet'))).toEqual(await rows(f('u5/samples.parquet')));
  });
});
