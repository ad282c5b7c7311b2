import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fnv1a32, rowHashUnit } from './feature-hash';
import { SampleBuildError } from './sample-build.error';
import type { BuiltSamples, EncodedSplit, FeatureDef, SampleBuildRequest } from './sample-build.types';
import {
  buildSamples,
  DEFAULT_RANGE_ROWS,
  estimateBuildBytes,
  MIN_RANGE_ROWS,
  rangeRowsFor,
  sampleBuildKey,
} from './sample-builder';

let dir: string;
const f = (name: string): string => path.join(dir, name);

/** writes a Parquet file from a DuckDB SELECT */
async function parquet(name: string, select: string): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  try {
    await con.run(`COPY (${select}) TO '${f(name)}' (FORMAT parquet)`);
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'abacus-build-'));
  // 10 impressions, written out of time order (the builder orders by ts); ts 9 and 10 are the test split
  await parquet(
    'tiny.parquet',
    `SELECT * FROM (VALUES
      (7, 8, 2, 0, 8.0, 'b', [4], ['q'], 3.0, 'x'),
      (0, 1, 1, 0, 1.0, 'b', [3, 1], ['p', 'q'], 0.5, 'x'),
      (9, 10, 2, 0, 10.0, NULL, [7, 2], ['p', 'w'], 5.0, 'y'),
      (1, 2, 2, 1, NULL, 'a', [], [], 10.0, 'x'),
      (2, 3, 1, 0, 3.0, NULL, [2, -1], ['q', NULL], -3.0, 'x'),
      (3, 4, 3, 1, 4.0, 'b', NULL, NULL, NULL, 'y'),
      (4, 5, 2, 0, NULL, 'c', [5], ['r'], 100.0, 'x'),
      (5, 6, 1, 1, 6.0, 'a', [0], ['p'], 2.0, 'y'),
      (6, 7, 3, 0, 7.0, 'a', [1, 1], ['q'], 1.0, 'x'),
      (8, 9, 1, 1, NULL, 'z', [9], ['s'], 4.0, 'x')
    ) t(id, ts, user_id, click, x, city, tags, stags, price, domain)`,
  );
  // user snapshots at t=10 and t=20 (user 1), t=10 (user 2)
  await parquet(
    'users.parquet',
    `SELECT * FROM (VALUES (1, 10, 100.0, 'early'), (1, 20, 200.0, 'late'), (2, 10, 5.0, 'other')) t(user_id, ts, v, seg)`,
  );
  // impressions around the snapshots: before the first one, between, exactly at, after; an unknown user
  await parquet(
    'pit.parquet',
    `SELECT * FROM (VALUES (0, 1, 15, 0), (1, 1, 25, 1), (2, 1, 5, 0), (3, 1, 20, 1), (4, 2, 30, 0), (5, 3, 12, 1))
       t(imp, user_id, ts, click)`,
  );
  await writeFile(f('users.csv'), 'user_id,tier,score,mixed\n1,gold,0.5,1.5\n2,silver,1.5,abc\n3,gold,2.5,2\n');
  await writeFile(f('dup_users.csv'), 'user_id,tier\n1,gold\n1,silver\n2,gold\n');
  await writeFile(f('samples.csv'), 'row,user_id,label,grade\n0,1,yes,3\n1,2,no,1\n2,3,no,2\n3,1,yes,1\n4,2,no,3\n5,3,yes,2\n');
  await writeFile(f('three.csv'), 'ts,label,x\n1,0,1\n2,1,2\n3,2,3\n');
  const rowsCsv = ['i,click'];
  for (let i = 0; i < 400; i++) rowsCsv.push(`${i},${i % 3 === 0 ? 1 : 0}`);
  await writeFile(f('untimed.csv'), rowsCsv.join('\n') + '\n');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const col = (name: string, kind: FeatureDef['kind'], transform?: FeatureDef['transform']): FeatureDef => ({
  name,
  kind,
  source: { kind: 'column' },
  ...(transform ? { transform } : {}),
});

const tinyRequest = (features: FeatureDef[], extra: Partial<SampleBuildRequest> = {}): SampleBuildRequest => ({
  samples: { file: f('tiny.parquet'), label: 'click', time: 'ts', groupKey: 'user_id' },
  features,
  split: { testFrom: 9 },
  ...extra,
});

const slot = (s: EncodedSplit, name: string) => s.slots.find((x) => x.name === name)!;
const numericCol = (s: EncodedSplit, name: string): number[] => {
  const j = s.numericNames.indexOf(name);
  const k = s.numericNames.length;
  return Array.from({ length: s.rows }, (_, r) => s.numeric[r * k + j]);
};
/** slot rows as arrays */
const lists = (s: EncodedSplit, name: string): number[][] => {
  const { ids, offsets } = slot(s, name);
  return Array.from({ length: s.rows }, (_, r) => Array.from(ids.subarray(offsets[r], offsets[r + 1])));
};
const f32 = (x: number): number => Math.fround(x);

async function buildError(req: SampleBuildRequest): Promise<SampleBuildError> {
  const err = await buildSamples(req).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SampleBuildError);
  return err as SampleBuildError;
}

describe('buildSamples: encodings on a hand-made table', () => {
  let built: BuiltSamples;
  const progress: number[] = [];
  beforeAll(async () => {
    built = await buildSamples(
      tinyRequest([
        col('x', 'numeric'),
        col('city', 'categorical'),
        col('tags', 'multi_id'),
        col('stags', 'multi_id'),
        { name: 'log_price', kind: 'numeric', source: { kind: 'column', column: 'price' }, transform: { type: 'log' } },
        {
          name: 'price_bucket',
          kind: 'numeric',
          source: { kind: 'column', column: 'price' },
          transform: { type: 'buckets', boundaries: [0, 2, 5] },
        },
        {
          name: 'city_hash',
          kind: 'categorical',
          source: { kind: 'column', column: 'city' },
          transform: { type: 'hash', hashBuckets: 7 },
        },
        {
          name: 'tags_hash',
          kind: 'multi_id',
          source: { kind: 'column', column: 'tags' },
          transform: { type: 'hash', hashBuckets: 5 },
        },
        { name: 'price_std', kind: 'numeric', source: { kind: 'column', column: 'price' }, transform: { type: 'standardize' } },
      ]),
      { onProgress: (p) => progress.push(p) },
    );
  });

  it('splits by time: test = ts >= testFrom, rows in time order, labels and group keys aligned', () => {
    expect(built.split).toMatchObject({ testFrom: 9, trainRows: 8, testRows: 2 });
    expect(Array.from(built.train.labels)).toEqual([0, 1, 0, 1, 0, 1, 0, 0]);
    expect(Array.from(built.test.labels)).toEqual([1, 0]);
    expect(built.split.trainPositiveRate).toBeCloseTo(3 / 8, 12);
    expect(built.split.testPositiveRate).toBeCloseTo(1 / 2, 12);
    expect(Array.from(built.train.keys!.user_id)).toEqual([1, 2, 1, 3, 2, 1, 3, 2]);
    expect(Array.from(built.test.keys!.user_id)).toEqual([1, 2]);
  });

  it('numeric: Float32, missing → train mean (never NaN); log; standardize is a no-op here', () => {
    const mean = (1 + 3 + 4 + 6 + 7 + 8) / 6; // train rows only: ts 10's x = 10 does not count
    expect(numericCol(built.train, 'x')).toEqual([1, mean, 3, 4, mean, 6, 7, 8].map(f32));
    expect(numericCol(built.test, 'x')).toEqual([mean, 10].map(f32));
    const lg = (v: number): number => Math.sign(v) * Math.log(1 + Math.abs(v));
    const trainPrices = [0.5, 10, -3, NaN, 100, 2, 1, 3];
    const logMean = trainPrices.filter((p) => !Number.isNaN(p)).reduce((a, p) => a + lg(p), 0) / 7;
    expect(numericCol(built.train, 'log_price')).toEqual(trainPrices.map((p) => f32(Number.isNaN(p) ? logMean : lg(p))));
    expect(numericCol(built.test, 'log_price')).toEqual([4, 5].map((p) => f32(lg(p))));
    const rawMean = (0.5 + 10 - 3 + 100 + 2 + 1 + 3) / 7;
    expect(numericCol(built.train, 'price_std')).toEqual(trainPrices.map((p) => f32(Number.isNaN(p) ? rawMean : p)));
    expect(built.train.numericNames).toEqual(['x', 'log_price', 'price_std']);
    expect(built.inputs.numeric).toEqual(['x', 'log_price', 'price_std']);
    expect(built.train.numeric.length).toBe(8 * 3);
    expect(built.test.numeric.every((v) => Number.isFinite(v))).toBe(true);
  });

  it('categorical: sorted train dictionary (id = 1 + index), OOV → 0, missing → -1', () => {
    // train cities a, b, c → 1, 2, 3; 'z' only in test → 0
    expect(lists(built.train, 'city')).toEqual([[2], [1], [-1], [2], [3], [1], [1], [2]]);
    expect(lists(built.test, 'city')).toEqual([[0], [-1]]);
    expect(Array.from(slot(built.train, 'city').offsets)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(built.inputs.slots.find((s) => s.name === 'city')).toEqual({ name: 'city', vocab: 4 });
  });

  it('multi-id: integer ids as given in CSR (negatives and nulls dropped, null list empty), vocab = max id + 1', () => {
    expect(lists(built.train, 'tags')).toEqual([[3, 1], [], [2], [], [5], [0], [1, 1], [4]]);
    expect(lists(built.test, 'tags')).toEqual([[9], [7, 2]]);
    expect(Array.from(slot(built.train, 'tags').offsets)).toEqual([0, 2, 2, 3, 3, 4, 5, 7, 8]);
    expect(built.features.find((x) => x.name === 'tags')).toEqual({
      name: 'tags',
      kind: 'multi_id',
      input: 'slot',
      vocab: 10,
      missingRate: 0.2,
    });
  });

  it('multi-id strings: train dictionary like categorical (p, q, r → 1, 2, 3; unseen → 0)', () => {
    expect(lists(built.train, 'stags')).toEqual([[1, 2], [], [2], [], [3], [1], [2], [2]]);
    expect(lists(built.test, 'stags')).toEqual([[0], [1, 0]]);
    expect(built.inputs.slots.find((s) => s.name === 'stags')!.vocab).toBe(4);
  });

  it('buckets: id = number of boundaries <= x, missing → -1, vocab = boundaries + 1', () => {
    // prices 0.5, 10, -3, NULL, 100, 2, 1, 3 | 4, 5 against boundaries [0, 2, 5]
    expect(lists(built.train, 'price_bucket')).toEqual([[1], [3], [0], [-1], [3], [2], [1], [2]]);
    expect(lists(built.test, 'price_bucket')).toEqual([[2], [3]]);
    expect(built.features.find((x) => x.name === 'price_bucket')).toMatchObject({ kind: 'numeric', input: 'slot', vocab: 4 });
  });

  it('hash: FNV-1a of the value string mod buckets (integers by their decimal string)', () => {
    const h = (s: string, b: number): number => fnv1a32(s) % b;
    expect(lists(built.train, 'city_hash')).toEqual(['b', 'a', null, 'b', 'c', 'a', 'a', 'b'].map((c) => (c ? [h(c, 7)] : [-1])));
    expect(lists(built.test, 'city_hash')).toEqual([[h('z', 7)], [-1]]);
    expect(lists(built.test, 'tags_hash')).toEqual([[h('9', 5)], [h('7', 5), h('2', 5)]]);
    expect(lists(built.train, 'tags_hash')[0]).toEqual([h('3', 5), h('1', 5)]);
    expect(built.inputs.slots.find((s) => s.name === 'tags_hash')!.vocab).toBe(5);
  });

  it('reports inputs in feature order, missing rates, a cache key, timings and monotone progress', () => {
    expect(built.inputs.slots.map((s) => s.name)).toEqual(['city', 'tags', 'stags', 'price_bucket', 'city_hash', 'tags_hash']);
    const rate = Object.fromEntries(built.features.map((x) => [x.name, x.missingRate]));
    expect(rate).toEqual({
      x: 0.3,
      city: 0.2,
      tags: 0.2,
      stags: 0.2,
      log_price: 0.1,
      price_bucket: 0.1,
      city_hash: 0.2,
      tags_hash: 0.2,
      price_std: 0.1,
    });
    expect(built.cacheKey).toMatch(/^[0-9a-f]{64}$/);
    expect(built.timings.readMs).toBeGreaterThan(0);
    expect(progress[progress.length - 1]).toBe(1);
    expect(progress.every((p, i) => i === 0 || p >= progress[i - 1])).toBe(true);
  });
});

describe('buildSamples: splits, filter and row cap', () => {
  it('default testFraction 0.2 puts the time quantile boundary in test', async () => {
    const b = await buildSamples({ ...tinyRequest([col('x', 'numeric')]), split: {} });
    // ts 1..10: the 0.8 time quantile is 8 → ts 8, 9, 10 in test (the boundary is inclusive)
    expect(b.split).toMatchObject({ testFrom: 8, trainRows: 7, testRows: 3 });
    const b2 = await buildSamples({ ...tinyRequest([col('x', 'numeric')]), split: { testFraction: 0.5 } });
    expect(b2.split).toMatchObject({ testFrom: 5, trainRows: 4, testRows: 6 });
  });

  it('an explicit testFrom is inclusive', async () => {
    const b = await buildSamples(tinyRequest([col('x', 'numeric')], { split: { testFrom: 10 } }));
    expect(b.split).toMatchObject({ testFrom: 10, trainRows: 9, testRows: 1 });
    expect(numericCol(b.test, 'x')).toEqual([10]);
  });

  it('without a time column: seeded hash split of the file row index', async () => {
    const req = (seed: number): SampleBuildRequest => ({
      samples: { file: f('untimed.csv'), label: 'click' },
      features: [col('i', 'numeric')],
      split: { testFraction: 0.3, seed },
    });
    const b = await buildSamples(req(7));
    const expectedTest = Array.from({ length: 400 }, (_, i) => i).filter((i) => rowHashUnit(i, 7) < 0.3);
    expect(numericCol(b.test, 'i')).toEqual(expectedTest);
    expect(b.split.testFrom).toBeNull();
    expect(b.split.testRows).toBeGreaterThan(80);
    expect(b.split.testRows).toBeLessThan(160);
    expect(numericCol(b.train, 'i').length + expectedTest.length).toBe(400);
    const again = await buildSamples(req(8));
    expect(numericCol(again.test, 'i')).not.toEqual(expectedTest);
  });

  it('filter keeps the rows whose column is one of the values; maxRows keeps the first N by time', async () => {
    const b = await buildSamples(
      tinyRequest([col('x', 'numeric')], { filter: { column: 'domain', values: ['y'] }, split: { testFrom: 6 } }),
    );
    // domain y: ts 4, 6, 10
    expect(b.split).toMatchObject({ trainRows: 1, testRows: 2 });
    expect(numericCol(b.train, 'x')).toEqual([4]);
    expect(numericCol(b.test, 'x')).toEqual([6, 10]);
    const capped = await buildSamples(tinyRequest([col('x', 'numeric')], { maxRows: 5, split: { testFrom: 5 } }));
    expect(capped.split).toMatchObject({ trainRows: 4, testRows: 1 });
    expect(Array.from(capped.train.keys!.user_id)).toEqual([1, 2, 1, 3]);
  });

  it('CSV samples: string label with an explicit positive, plain join of a CSV entity table (VARCHAR tier)', async () => {
    const b = await buildSamples({
      samples: { file: f('samples.csv'), label: 'label', positive: 'yes', time: 'row' },
      features: [
        {
          name: 'tier',
          kind: 'categorical',
          source: { kind: 'table', file: f('users.csv'), entityKey: 'user_id', sampleKey: 'user_id' },
        },
        {
          name: 'score',
          kind: 'numeric',
          source: { kind: 'table', file: f('users.csv'), entityKey: 'user_id', sampleKey: 'user_id' },
        },
        col('grade', 'categorical'),
      ],
      split: { testFrom: 4 },
    });
    expect(Array.from(b.train.labels)).toEqual([1, 0, 0, 1]);
    expect(Array.from(b.test.labels)).toEqual([0, 1]);
    // users 1, 2, 3, 1 | 2, 3 → tiers gold, silver, gold, gold | silver, gold
    expect(lists(b.train, 'tier')).toEqual([[1], [2], [1], [1]]);
    expect(lists(b.test, 'tier')).toEqual([[2], [1]]);
    expect(numericCol(b.train, 'score')).toEqual([0.5, 1.5, 2.5, 0.5]);
    // integer categories sort numerically: 1, 2, 3 → 1, 2, 3
    expect(lists(b.train, 'grade')).toEqual([[3], [1], [2], [1]]);
  });
});

describe('buildSamples: point-in-time joins', () => {
  it('takes the latest snapshot at or before the impression, never a later one; none before the first', async () => {
    const source = {
      kind: 'table',
      file: f('users.parquet'),
      entityKey: 'user_id',
      sampleKey: 'user_id',
      timeColumn: 'ts',
    } as const;
    const b = await buildSamples({
      samples: { file: f('pit.parquet'), label: 'click', time: 'ts', groupKey: 'imp' },
      features: [
        { name: 'seg', kind: 'categorical', source },
        { name: 'v', kind: 'numeric', source },
      ],
      split: { testFrom: 30 },
    });
    // by time: t5 (u1, before its first snapshot), t12 (u3, unknown), t15 (u1 → t10), t20 (u1 → t20, inclusive), t25 (u1 → t20) | t30 (u2)
    expect(Array.from(b.train.keys!.imp)).toEqual([2, 5, 0, 3, 1]);
    // train dictionary: early = 1, late = 2 ('other' only in test → OOV 0)
    expect(lists(b.train, 'seg')).toEqual([[-1], [-1], [1], [2], [2]]);
    expect(lists(b.test, 'seg')).toEqual([[0]]);
    const mean = (100 + 200 + 200) / 3;
    expect(numericCol(b.train, 'v')).toEqual([mean, mean, 100, 200, 200].map(f32));
    expect(numericCol(b.test, 'v')).toEqual([5]);
    expect(b.features.find((x) => x.name === 'v')!.missingRate).toBeCloseTo(2 / 6, 12);
  });

  it('without timeColumn a snapshot table (repeated keys) is refused instead of multiplying rows', async () => {
    const err = await buildError({
      samples: { file: f('pit.parquet'), label: 'click', time: 'ts' },
      features: [
        {
          name: 'v',
          kind: 'numeric',
          source: { kind: 'table', file: f('users.parquet'), entityKey: 'user_id', sampleKey: 'user_id' },
        },
      ],
      split: { testFrom: 30 },
    });
    expect(err.field).toBe('features.0.source.entityKey');
    expect(err.message).toMatch(/not unique/);
  });
});

describe('sampleBuildKey', () => {
  const base = (): SampleBuildRequest =>
    tinyRequest([
      col('x', 'numeric'),
      { name: 'city', kind: 'categorical', source: { kind: 'column' }, transform: { type: 'hash', hashBuckets: 7 } },
    ]);

  it('is stable for the same request (and equals the built key); defaults do not change it', async () => {
    const key = sampleBuildKey(base());
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(sampleBuildKey(base())).toBe(key);
    const withDefaults = base();
    withDefaults.features[0] = {
      ...withDefaults.features[0],
      transform: { type: 'none' },
      source: { kind: 'column', column: 'x' },
    };
    withDefaults.split = { testFrom: 9, testFraction: 0.2, seed: 0 };
    expect(sampleBuildKey(withDefaults)).toBe(key);
    expect((await buildSamples(base())).cacheKey).toBe(key);
  });

  it('changes with any feature def, transform, source, split, filter, cap, label or file mtime', async () => {
    const key = sampleBuildKey(base());
    const variants: ((r: SampleBuildRequest) => void)[] = [
      (r) => (r.features[0].kind = 'categorical'),
      (r) => (r.features[0].transform = { type: 'log' }),
      (r) => (r.features[1].transform = { type: 'hash', hashBuckets: 8 }),
      (r) => (r.features[0].source = { kind: 'column', column: 'price' }),
      (r) => r.features.reverse(),
      (r) => r.features.pop(),
      (r) => (r.split = { testFrom: 8 }),
      (r) => (r.split = { testFrom: 9, seed: 1 }),
      (r) => (r.filter = { column: 'domain', values: ['x'] }),
      (r) => (r.maxRows = 5),
      (r) => (r.samples.positive = 0),
      (r) => (r.samples.groupKey = null),
      (r) => (r.samples.label = 'x'),
    ];
    const keys = new Set<string>([key]);
    for (const change of variants) {
      const r = base();
      change(r);
      keys.add(sampleBuildKey(r));
    }
    expect(keys.size).toBe(variants.length + 1);
    const later = new Date(Date.now() + 60_000);
    await utimes(f('tiny.parquet'), later, later);
    expect(sampleBuildKey(base())).not.toBe(key);
  });

  it('includes the identity of feature table files', async () => {
    const req: SampleBuildRequest = {
      samples: { file: f('pit.parquet'), label: 'click', time: 'ts' },
      features: [
        {
          name: 'v',
          kind: 'numeric',
          source: { kind: 'table', file: f('users.parquet'), entityKey: 'user_id', sampleKey: 'user_id', timeColumn: 'ts' },
        },
      ],
      split: {},
    };
    const key = sampleBuildKey(req);
    const later = new Date(Date.now() + 120_000);
    await utimes(f('users.parquet'), later, later);
    expect(sampleBuildKey(req)).not.toBe(key);
  });
});

describe('buildSamples: errors', () => {
  it('unknown column: names the field and the available columns', async () => {
    const err = await buildError(tinyRequest([col('nope', 'numeric')]));
    expect(err.field).toBe('features.0.name');
    expect(err.message).toMatch(
      /unknown column 'nope' .*\(available: id, ts, user_id, click, x, city, tags, stags, price, domain\)/,
    );
    const err2 = await buildError(tinyRequest([{ name: 'x2', kind: 'numeric', source: { kind: 'column', column: 'missing' } }]));
    expect(err2.field).toBe('features.0.source.column');
    expect(
      (await buildError({ ...tinyRequest([]), samples: { file: f('tiny.parquet'), label: 'clicks', time: 'ts' } })).field,
    ).toBe('samples.label');
  });

  it('unknown entity key, sample key and time column of a feature table', async () => {
    const src = {
      kind: 'table',
      file: f('users.parquet'),
      entityKey: 'user_id',
      sampleKey: 'user_id',
      timeColumn: 'ts',
    } as const;
    const req = (source: FeatureDef['source']): SampleBuildRequest => ({
      samples: { file: f('pit.parquet'), label: 'click', time: 'ts' },
      features: [col('imp', 'numeric'), { name: 'v', kind: 'numeric', source }],
      split: { testFrom: 30 },
    });
    const e1 = await buildError(req({ ...src, entityKey: 'uid' }));
    expect(e1.field).toBe('features.1.source.entityKey');
    expect(e1.message).toMatch(/unknown column 'uid' in feature table .*users\.parquet \(available: user_id, ts, v, seg\)/);
    expect((await buildError(req({ ...src, sampleKey: 'uid' }))).field).toBe('features.1.source.sampleKey');
    expect((await buildError(req({ ...src, timeColumn: 'when' }))).field).toBe('features.1.source.timeColumn');
    expect((await buildError(req({ ...src, file: f('nope.parquet') }))).field).toBe('features.1.source.file');
  });

  it('non-binary label, missing positive class, missing files', async () => {
    const three = await buildError({
      samples: { file: f('three.csv'), label: 'label', time: 'ts' },
      features: [col('x', 'numeric')],
      split: {},
    });
    expect(three.field).toBe('samples.label');
    expect(three.message).toMatch(/label 'label' has 3 distinct value\(s\) \(0, 1, 2\); expected exactly 2 classes/);
    const pos = await buildError({
      ...tinyRequest([]),
      samples: { file: f('tiny.parquet'), label: 'click', time: 'ts', positive: 'maybe' },
    });
    expect(pos.field).toBe('samples.positive');
    const missing = await buildError({ ...tinyRequest([]), samples: { file: f('gone.parquet'), label: 'click', time: 'ts' } });
    expect(missing.field).toBe('samples.file');
    expect(missing.message).toMatch(/does not exist/);
  });

  it('kind mismatch: numeric on non-numeric text, categorical on a list, multi-id on a scalar', async () => {
    const mixed = await buildError({
      samples: { file: f('samples.csv'), label: 'label', positive: 'yes', time: 'row' },
      features: [
        {
          name: 'mixed',
          kind: 'numeric',
          source: { kind: 'table', file: f('users.csv'), entityKey: 'user_id', sampleKey: 'user_id' },
        },
      ],
      split: { testFrom: 4 },
    });
    expect(mixed.field).toBe('features.0.kind');
    expect(mixed.message).toMatch(/non-numeric value\(s\), e\.g\. 'abc'/);
    expect((await buildError(tinyRequest([col('tags', 'categorical')]))).field).toBe('features.0.kind');
    expect((await buildError(tinyRequest([col('x', 'multi_id')]))).field).toBe('features.0.kind');
    expect((await buildError(tinyRequest([col('city', 'numeric')]))).message).toMatch(/non-numeric value\(s\), e\.g\. 'a'/);
  });

  it('empty train or test split; invalid requests name the field', async () => {
    expect((await buildError(tinyRequest([col('x', 'numeric')], { split: { testFrom: 11 } }))).field).toBe('split');
    expect((await buildError(tinyRequest([col('x', 'numeric')], { split: { testFrom: 0 } }))).message).toMatch(
      /train split is empty/,
    );
    const badTransform = await buildError(tinyRequest([col('x', 'numeric', { type: 'hash', hashBuckets: 8 })]));
    expect(badTransform.field).toBe('features.0.transform.type');
    expect((await buildError(tinyRequest([col('x', 'numeric'), col('x', 'numeric')]))).field).toBe('features.1.name');
    const noTime = await buildError({ ...tinyRequest([]), samples: { file: f('tiny.parquet'), label: 'click' } });
    expect(noTime.field).toBe('split.testFrom');
    expect(() => sampleBuildKey(tinyRequest([col('x', 'numeric', { type: 'buckets', boundaries: [2, 1] })]))).toThrow(
      SampleBuildError,
    );
  });
});

describe('fnv1a32', () => {
  it('matches the published FNV-1a test vectors and hashes UTF-8 bytes', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
    const reference = (s: string): number => {
      let h = 0x811c9dc5;
      for (const byte of new TextEncoder().encode(s)) h = Math.imul(h ^ byte, 0x01000193);
      return h >>> 0;
    };
    for (const s of ['é', 'Zürich', '北京', '🎉 party', '\ud800x', 'a\udc00']) expect(fnv1a32(s)).toBe(reference(s));
  });
});

describe('buildSamples: the memory limit', () => {
  it('refuses a build over the limit before reading the features, naming the rows, the estimate and the limit', async () => {
    const req = tinyRequest([col('x', 'numeric'), col('city', 'categorical')]);
    // 10 rows x (1 numeric, 1 slot): 10 * (16 + 24 + 32) = 720 bytes
    expect(estimateBuildBytes(10, 1, 1)).toBe(720);
    const err = await buildSamples(req, { memoryLimitBytes: 719 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SampleBuildError);
    expect((err as SampleBuildError).field).toBe('samples');
    expect((err as Error).message).toMatch(
      /^samples: 10 rows x 2 features would take about 720 bytes of memory .* over this worker's limit of 719 bytes \(ABACUS_SAMPLE_MEMORY_MB\)/,
    );
    // not "out of memory": the queue would take that for a transient failure and retry it
    expect((err as Error).message).not.toMatch(/out of memory/i);
    const ok = await buildSamples(req, { memoryLimitBytes: 720 });
    expect(ok.train.rows + ok.test.rows).toBe(10);
  });
});

describe('rangeRowsFor', () => {
  it('cuts a set into a range per thread, never above the most nor below MIN_RANGE_ROWS', () => {
    // 1M rows on 16 threads: 62,500 rows a range, 16 ranges
    expect(rangeRowsFor(1_000_000, DEFAULT_RANGE_ROWS, 16)).toBe(62_500);
    expect(Math.ceil(1_000_000 / rangeRowsFor(1_000_000, DEFAULT_RANGE_ROWS, 16))).toBe(16);
    // one thread, or a set larger than a range per thread: the most
    expect(rangeRowsFor(1_000_000)).toBe(DEFAULT_RANGE_ROWS);
    expect(rangeRowsFor(10_000_000, DEFAULT_RANGE_ROWS, 16)).toBe(DEFAULT_RANGE_ROWS);
    // a small set: not below MIN_RANGE_ROWS, however many threads
    expect(rangeRowsFor(100_000, DEFAULT_RANGE_ROWS, 16)).toBe(MIN_RANGE_ROWS);
    // a smaller most than MIN_RANGE_ROWS is kept as it is
    expect(rangeRowsFor(100_000, 997, 16)).toBe(997);
    expect(rangeRowsFor(0, 4096, 4)).toBe(4096);
  });
});
