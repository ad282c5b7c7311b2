import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataDir } from '@abacus/catalog';
import type { ColumnarDataset } from '@abacus/runtime';
import { BuiltSamplesCache } from './built-samples.cache';
import { architectureSchema, trainingSchema, type ModelRecipe, type ResolvedFeature } from './model-recipe.schema';

let root: string;
let dataDir: DataDir;

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-project-'));
  dataDir = new DataDir(root);
  fs.mkdirSync(path.join(root, 'in'), { recursive: true });
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  try {
    await con.run(
      `COPY (SELECT i AS id, (i * 37) % 500 AS ts, i % 40 AS user_id,
          CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 7919) % 1000 / 10.0 END AS a,
          ln(1 + (i * 13) % 97) AS b, ['x', 'y', 'z', NULL][1 + i % 4] AS c, 'k' || (i % 57) AS d,
          [i % 5, (i + 1) % 7] AS m, CAST((i * 13) % 5 < 2 AS INTEGER) AS click FROM range(600) r(i))
        TO '${path.join(root, 'in', 'samples.parquet')}' (FORMAT parquet)`,
    );
    await con.run(
      `COPY (SELECT u AS uid, u * 0.5 AS spend, 'seg' || (u % 3) AS segment FROM range(40) r(u))
        TO '${path.join(root, 'in', 'users.parquet')}' (FORMAT parquet)`,
    );
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}, 60_000);

afterAll(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

const users = (column: string) =>
  ({ kind: 'table', file: path.join('in', 'users.parquet'), entityKey: 'uid', sampleKey: 'user_id', column }) as const;
const FEATURES: ResolvedFeature[] = [
  { name: 'a', kind: 'numeric', source: { kind: 'column' }, transform: { type: 'standardize' } },
  { name: 'b', kind: 'numeric', source: { kind: 'column' } },
  { name: 'c', kind: 'categorical', source: { kind: 'column' } },
  { name: 'd', kind: 'categorical', source: { kind: 'column' }, transform: { type: 'hash', hashBuckets: 16 } },
  { name: 'm', kind: 'multi_id', source: { kind: 'column' } },
  { name: 'spend', kind: 'numeric', source: users('spend'), transform: { type: 'log' } },
  { name: 'segment', kind: 'categorical', source: users('segment') },
];

const recipe = (time: boolean): ModelRecipe => ({
  sampleSetId: 's',
  sampleFile: path.join('in', 'samples.parquet'),
  label: 'click',
  positive: null,
  time: time ? 'ts' : null,
  testFrom: time ? 400 : null,
  filter: null,
  features: FEATURES,
  architecture: architectureSchema.parse({}),
  training: trainingSchema.parse({}),
  modelId: null,
});

const plain = (d: ColumnarDataset) => ({
  rows: d.rows,
  numericNames: d.numericNames,
  numeric: Array.from(d.numeric),
  slots: d.slots.map((s) => ({ name: s.name, ids: Array.from(s.ids), offsets: Array.from(s.offsets) })),
  labels: Array.from(d.labels),
});

describe('BuiltSamplesCache: a subset of a built set is cut from it, not built again', () => {
  it('gives what building the subset alone gives, for any subset and order, with and without a time column', async () => {
    for (const time of [true, false]) {
      const r = recipe(time);
      const cache = new BuiltSamplesCache(dataDir);
      const whole = await cache.get(r);
      expect(whole.cached).toBe(false);
      await fc.assert(
        fc.asyncProperty(fc.shuffledSubarray(FEATURES, { minLength: 1, maxLength: FEATURES.length - 1 }), async (subset) => {
          const cut = await cache.get(r, subset);
          // a cache of its own, asked for a recipe of just these features, builds them from the files
          const direct = await new BuiltSamplesCache(dataDir).get({ ...r, features: subset }, subset);
          expect(cut.meta.projectedFrom).toBe(whole.key);
          expect(direct.meta.projectedFrom).toBeUndefined();
          expect(cut.key).toBe(direct.key);
          expect(cut.inputs).toEqual(direct.inputs);
          for (const split of ['train', 'validation', 'trainAll', 'test'] as const) {
            expect(plain(cut[split])).toEqual(plain(direct[split]));
          }
        }),
        { numRuns: 8, seed: time ? 11 : 12 },
      );
    }
  }, 120_000);

  it('cuts from the whole set on disk when another set was built in between', async () => {
    const r = recipe(true);
    const first = new BuiltSamplesCache(dataDir);
    await first.get(r);
    // a fresh cache (another worker): the whole set is on disk, so the subset is read and cut, not built
    const second = new BuiltSamplesCache(dataDir);
    const sub = await second.get(r, FEATURES.slice(2));
    expect(sub.meta.projectedFrom).toBeDefined();
    expect(sub.inputs.slots.map((s) => s.name)).toEqual(['c', 'd', 'm', 'segment']);
    // a feature outside the recipe is built, not cut
    const other: ResolvedFeature = { name: 'b2', kind: 'numeric', source: { kind: 'column', column: 'b' } };
    const built = await second.get(r, [FEATURES[0], other]);
    expect(built.meta.projectedFrom).toBeUndefined();
    expect(built.inputs.numeric).toEqual(['a', 'b2']);
  }, 60_000);
});
