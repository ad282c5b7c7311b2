import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSameBuild } from '../../../../test/support/built-samples';
import type { BuildSamplesOptions, BuiltSamples, FeatureDef, SampleBuildRequest } from './sample-build.types';
import { tableSource } from '../io/table-reader';
import { rowHashUnit } from './feature-hash';
import { buildSamples, fileTimeSpan, prepareBuild } from './sample-builder';

// Ranges read straight from the sample Parquet files (no joined, ordered copy written) and string
// dictionaries looked up by DuckDB must give exactly the samples of the joined copy and of the
// encoder's own lookup: the same rows in the same order, the same ids, the same statistics.

let dir: string;

async function sql(...statements: string[]): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  try {
    for (const s of statements) await con.run(s);
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

/** n rows of day d in (ts, row) order unless `scrambled`: numbers with gaps, strings (quotes, accents, nulls), lists */
const dayRows = (d: number, n: number, scrambled = false): string =>
  `SELECT ${d} * 1000 + (i * 1000) // ${n} AS ts, CAST((i * 7 + ${d}) % 13 AS INTEGER) AS user_id,
     CAST((hash(i, ${d}) % 5) = 0 AS INTEGER) AS click,
     CASE WHEN i % 11 = 0 THEN NULL ELSE (hash(i, ${d}, 1) % 1000) / 10.0 END AS x,
     CASE WHEN i % 17 = 0 THEN NULL WHEN i % 5 = 0 THEN 'é''s ' || (hash(i, ${d}, 2) % 7) ELSE 'c' || (hash(i, ${d}, 2) % (20 + ${d} * 3)) END AS city,
     CAST(hash(i, ${d}, 4) % 9 AS INTEGER) AS shop,
     [CAST(hash(i, ${d}, 3) % 9 AS INTEGER), CAST(i % 4 AS INTEGER)] AS tags,
     CASE WHEN i % 3 = 0 THEN 'a' ELSE 'b' END AS domain
   FROM range(${n}) r(i) ${scrambled ? `ORDER BY hash(i, ${d}, 9)` : 'ORDER BY i'}`;

async function writeDays(
  name: string,
  days: number[],
  n: number | ((d: number) => number),
  opts: { scrambled?: number[] } = {},
): Promise<string> {
  const root = path.join(dir, name);
  for (const d of days) {
    await mkdir(path.join(root, `day=${d}`), { recursive: true });
    const rowsOf = d === 2 && name === 'with-empty' ? 0 : typeof n === 'number' ? n : n(d);
    const scrambled = opts.scrambled?.includes(d) ?? false;
    await sql(
      `COPY (${dayRows(d, rowsOf, scrambled)}) TO '${path.join(root, `day=${d}`, 'part.parquet')}' (FORMAT parquet, ROW_GROUP_SIZE 128)`,
    );
  }
  return root;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'abacus-direct-'));
  await writeDays('ordered', [0, 1, 2, 3, 4], 700);
  await writeDays('with-empty', [0, 1, 2, 3], 500);
  // days 0..11 are read day=0, day=1, day=10, day=11, day=2, ...: the files' read order is not their time order
  await writeDays('many-days', [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], (d) => 100 + d * 10, { scrambled: [3, 10] });
  // files out of order within: read in slices of their rows ranked by (time, row), each ordered as read
  await writeDays('scrambled', [0, 1, 2, 3], 500, { scrambled: [1] });
  await writeDays('scrambled-large', [0, 1, 2, 3], (d) => (d === 1 ? 700 : 300), { scrambled: [1, 3] });
  // day d's times reach into day d + 1's
  await writeDays('overlapping', [0, 1, 2, 3], 400);
  await sql(
    `COPY (SELECT * REPLACE (ts + 500 AS ts) FROM '${path.join(dir, 'overlapping', 'day=1', 'part.parquet')}') TO '${path.join(dir, 'overlapping', 'day=1', 'part.parquet')}' (FORMAT parquet)`,
  );
  await sql(`COPY (${dayRows(0, 2000)}) TO '${path.join(dir, 'one.parquet')}' (FORMAT parquet, ROW_GROUP_SIZE 256)`);
  await sql(
    `COPY (${dayRows(0, 2000, true)}) TO '${path.join(dir, 'one-scrambled.parquet')}' (FORMAT parquet, ROW_GROUP_SIZE 256)`,
  );
  // row groups of 2,048 rows (DuckDB writes at least a vector's rows a group)
  await sql(`COPY (${dayRows(0, 10_000)}) TO '${path.join(dir, 'groups.parquet')}' (FORMAT parquet, ROW_GROUP_SIZE 2048)`);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const features: FeatureDef[] = [
  { name: 'x', kind: 'numeric', source: { kind: 'column' } },
  { name: 'lx', kind: 'numeric', source: { kind: 'column', column: 'x' }, transform: { type: 'log' } },
  { name: 'city', kind: 'categorical', source: { kind: 'column' } },
  {
    name: 'city_h',
    kind: 'categorical',
    source: { kind: 'column', column: 'city' },
    transform: { type: 'hash', hashBuckets: 16 },
  },
  { name: 'shop', kind: 'categorical', source: { kind: 'column' } },
  { name: 'tags', kind: 'multi_id', source: { kind: 'column' } },
];

const request = (set: string, opts: { time?: boolean; testFrom?: number; filter?: boolean } = {}): SampleBuildRequest => ({
  samples: {
    file: path.join(dir, set),
    version: set,
    label: 'click',
    ...(opts.time !== false ? { time: 'ts' } : {}),
    groupKey: 'user_id',
  },
  features,
  split: opts.time !== false ? { testFrom: opts.testFrom ?? 3000 } : { testFraction: 0.25, seed: 3 },
  ...(opts.filter ? { filter: { column: 'domain', values: ['b'] } } : {}),
});

const build = (req: SampleBuildRequest, directRanges: boolean, more: BuildSamplesOptions = {}): Promise<BuiltSamples> =>
  buildSamples(req, { rangeRows: 300, directRanges, ...more });

describe('buildSamples: ranges read straight from the sample files', () => {
  it('ordered day partitions: read in place, the same samples as the joined copy (several ranges a file)', async () => {
    const direct = await build(request('ordered'), true);
    const joined = await build(request('ordered'), false);
    expect(direct.timings.direct).toBe(true);
    expect(joined.timings.direct).toBe(false);
    expect(direct.split.trainRows + direct.split.testRows).toBe(3500);
    expect(direct.split.testRows).toBe(1400);
    expectSameBuild(joined, direct);
  });

  it('with a row filter, a hash split, one file, and an empty file among them', async () => {
    for (const req of [
      request('ordered', { filter: true }),
      request('ordered', { time: false }),
      request('with-empty', { testFrom: 1500 }),
      request('one.parquet', { testFrom: 600 }),
    ]) {
      const direct = await build(req, true);
      expect(direct.timings.direct).toBe(true);
      expectSameBuild(await build(req, false), direct);
    }
  });

  it('files read out of time order, files out of order within: read in place in time order, the same samples', async () => {
    for (const req of [
      request('many-days', { testFrom: 9000 }),
      request('scrambled', { testFrom: 2000 }),
      request('scrambled-large', { testFrom: 2000 }),
      request('one-scrambled.parquet', { testFrom: 600 }),
      request('one-scrambled.parquet', { testFrom: 600, filter: true }),
    ]) {
      const built = await build(req, true);
      expect(built.timings.direct).toBe(true);
      expectSameBuild(await build(req, false), built);
    }
    // a file out of order read in slices of a range's rows each (ranked by time and row), not at once
    for (const req of [request('scrambled-large', { testFrom: 2000 }), request('one-scrambled.parquet', { testFrom: 600 })]) {
      const sliced = await build(req, true, { unsortedRangeBytes: 1 });
      const once = await build(req, true);
      expect(sliced.timings.direct).toBe(true);
      expectSameBuild(once, sliced);
      expectSameBuild(await build(req, false), sliced);
    }
    const days = await build(request('many-days', { testFrom: 9000 }), true);
    expect(days.split.trainRows + days.split.testRows).toBe(12 * 100 + 66 * 10);
  });

  it('numbers rows by their place in the files as listed: the hash split is that of the rows read file by file', async () => {
    const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
    const con = await instance.connect();
    const users: number[] = [];
    for (const f of (await tableSource(path.join(dir, 'many-days'))).files!) {
      const r = await con.runAndReadAll(`SELECT user_id FROM read_parquet('${f}')`);
      users.push(...r.getRows().map((x) => Number(x[0])));
    }
    con.closeSync();
    instance.closeSync();
    const inTest = (rid: number) => rowHashUnit(rid, 3) < 0.25;
    for (const directRanges of [true, false]) {
      const built = await build(request('many-days', { time: false }), directRanges);
      expect(Array.from(built.train.keys!.user_id)).toEqual(users.filter((_, rid) => !inTest(rid)));
      expect(Array.from(built.test.keys!.user_id)).toEqual(users.filter((_, rid) => inTest(rid)));
    }
  });

  it('slices a file in order along its row groups, so no two slices decode one group; the same samples', async () => {
    const req = request('groups.parquet', { testFrom: 600 });
    const work = path.join(dir, 'groups-work');
    // 3,000 rows a range: one row group of 2,048 a slice (not 3,000, which would cut every group after the first)
    const plan = await prepareBuild(req, work, { rangeRows: 3000 });
    expect(plan.timings.direct).toBe(true);
    expect(plan.ranges.map((r) => [r.start, r.rows])).toEqual([
      [0, 2048],
      [2048, 2048],
      [4096, 2048],
      [6144, 2048],
      [8192, 1808],
    ]);
    await rm(work, { recursive: true, force: true });
    expectSameBuild(await build(req, false, { rangeRows: 3000 }), await build(req, true, { rangeRows: 3000 }));
  });

  it('checks a file’s time order in slices of its rows: the same count, span and rows out of order whatever the slice', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const con = await instance.connect();
    try {
      for (const [set, day] of [
        ['scrambled-large', 1],
        ['scrambled-large', 0],
        ['many-days', 10],
      ] as const) {
        const file = path.join(dir, set, `day=${day}`, 'part.parquet');
        // what the check must find, from the rows in file order
        const ts = (await (await con.run(`SELECT ts FROM read_parquet('${file}') ORDER BY file_row_number`)).getRows()).map((r) =>
          Number(r[0]),
        );
        const want = {
          index: 0,
          rows: ts.length,
          minT: Math.min(...ts),
          maxT: Math.max(...ts),
          back: ts.filter((t, i) => i > 0 && t < ts[i - 1]).length,
        };
        expect(want.back > 0, `${set} day ${day}`).toBe(day !== 0); // day 1 of scrambled-large and day 10 of many-days are scrambled
        for (const slice of [undefined, 97, 1000])
          expect(
            await fileTimeSpan(con, file, 0, 'CAST(ts AS DOUBLE)', '', null, slice),
            `${set} day ${day} slice ${slice}`,
          ).toEqual(want);
      }
    } finally {
      con.closeSync();
      instance.closeSync();
    }
  });

  it('files whose times overlap: the joined, ordered copy', async () => {
    const built = await build(request('overlapping', { testFrom: 2000 }), true);
    expect(built.timings.direct).toBe(false);
    expectSameBuild(await build(request('overlapping', { testFrom: 2000 }), false), built);
  });

  it('string dictionaries looked up by DuckDB give the ids of the encoder’s own lookup (unseen 0, missing -1)', async () => {
    const req = request('ordered', { testFrom: 2000 });
    const inSql = await build(req, true);
    const inJs = await build(req, true, { sqlDictionaryMax: 0 });
    expectSameBuild(inJs, inSql);
    // values first seen in the test period (more cities on later days) are unseen: id 0
    const city = inSql.test.slots.findIndex((x) => x.name === 'city');
    const ids = Array.from(inSql.test.slots[city].ids);
    expect(ids).toContain(0);
    expect(ids).toContain(-1);
    const dict = inSql.idSpaces.city;
    expect(dict.kind).toBe('dictionary');
    if (dict.kind === 'dictionary') expect(dict.values).toContain("é's 3");
  });
});
