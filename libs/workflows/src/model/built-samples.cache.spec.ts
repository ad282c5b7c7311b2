import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataDir } from '@abacus/catalog';
import { materialize, type ColumnarDataset, type RuntimeData } from '@abacus/runtime';
import { bundleThreadScript } from '../../../../test/support/thread-bundle';
import { BuiltSamplesCache, projectDataset, type StreamedSet } from './built-samples.cache';
import { ModelTrainer } from './model-trainer';
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

const plain = async (r: RuntimeData) => {
  const d = await materialize(r);
  return plainColumnar(d);
};
const plainColumnar = (d: ColumnarDataset) => ({
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
          // the columns the models read (a view of shards keeps the whole set's others beside them)
          const names = [...cut.inputs.numeric, ...cut.inputs.slots.map((s) => s.name)];
          const cols = async (d: RuntimeData) => plainColumnar(projectDataset(await materialize(d), names));
          for (const split of ['train', 'validation', 'trainAll', 'test'] as const) {
            expect(await cols(cut[split])).toEqual(await cols(direct[split]));
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

describe('BuiltSamplesCache: the build streams range by range into shard files', () => {
  it('writes one shard per range and split, the same set on threads as on one, and leaves no scratch behind', async () => {
    const { dir: bundle, script } = await bundleThreadScript(path.join(__dirname, '../../../samples/src/build/build-thread.ts'));
    try {
      for (const time of [true, false]) {
        const r = recipe(time);
        const one = fs.mkdtempSync(path.join(root, 'one-'));
        const many = fs.mkdtempSync(path.join(root, 'many-'));
        fs.cpSync(path.join(root, 'in'), path.join(one, 'in'), { recursive: true, preserveTimestamps: true });
        fs.cpSync(path.join(root, 'in'), path.join(many, 'in'), { recursive: true, preserveTimestamps: true });
        const whole = await new BuiltSamplesCache(new DataDir(one), { threadScript: null }).get(r);
        const ranged = await new BuiltSamplesCache(new DataDir(many), {
          threads: 3,
          threadScript: script,
          rangeRows: 97,
          duckdbMemoryMb: 64,
        }).get(r);
        const meta = ranged.meta as {
          shards: { train: { rows: number }[]; test: { rows: number }[] };
          timings: { ranges: number };
        };
        expect(meta.timings.ranges).toBe(Math.ceil(600 / 97));
        expect(meta.shards.train.length + meta.shards.test.length).toBeGreaterThanOrEqual(7);
        expect(meta.shards.train.reduce((a, s) => a + s.rows, 0)).toBe(ranged.trainAll.rows);
        for (const k of ['train', 'validation', 'trainAll', 'test'] as const)
          expect(await plain(ranged[k])).toEqual(await plain(whole[k]));
        expect(ranged.inputs).toEqual(whole.inputs);
        expect((ranged.meta as { features: unknown }).features).toEqual((whole.meta as { features: unknown }).features);
        // the set and the note of its last use (built/.used/<key>), no scratch
        const built = fs.readdirSync(path.join(many, 'built')).sort();
        expect(built).toEqual(['.used', ranged.dir.split(path.sep)[1]].sort());
        expect(fs.readdirSync(path.join(many, 'built', '.used'))).toEqual([ranged.dir.split(path.sep)[1]]);
        expect(fs.readdirSync(path.join(many, ranged.dir)).sort()).toEqual(['id-spaces.json', 'meta.json', 'test', 'train']);
      }
    } finally {
      fs.rmSync(bundle, { recursive: true, force: true });
    }
  }, 60_000);

  it('a build that fails leaves nothing under built/', async () => {
    const d = fs.mkdtempSync(path.join(root, 'fail-'));
    fs.cpSync(path.join(root, 'in'), path.join(d, 'in'), { recursive: true });
    const bad = { ...recipe(true), label: 'no_such_column' };
    await expect(new BuiltSamplesCache(new DataDir(d), { threadScript: null }).get(bad)).rejects.toThrow(/no_such_column/);
    expect(fs.existsSync(path.join(d, 'built')) ? fs.readdirSync(path.join(d, 'built')) : []).toEqual([]);
  });
});

describe('BuiltSamplesCache: built sets no trial used for a while leave the data directory (without a store)', () => {
  it('removes those unused for the given age, keeps those used since, builds a removed one again; with a store, removes nothing', async () => {
    const d = fs.mkdtempSync(path.join(root, 'prune-'));
    fs.cpSync(path.join(root, 'in'), path.join(d, 'in'), { recursive: true });
    const cache = new BuiltSamplesCache(new DataDir(d), { threadScript: null });
    const a = await cache.ensureBuilt(recipe(true));
    const b = await cache.ensureBuilt(recipe(false));
    expect(a.cached || b.cached).toBe(false);
    const day = 86_400_000;
    const age = (key: string, ms: number) => {
      const t = new Date(Date.now() - ms);
      fs.utimesSync(path.join(d, 'built', '.used', key), t, t);
    };
    age(a.key, 20 * day);
    age(b.key, 20 * day);
    // a use of b notes it again
    expect((await cache.ensureBuilt(recipe(false))).cached).toBe(true);
    // a build in progress (a dot folder) is never touched
    fs.mkdirSync(path.join(d, 'built', '.in-progress'));
    expect(cache.pruneUnused(14 * day)).toEqual([a.key]);
    expect(fs.readdirSync(path.join(d, 'built')).sort()).toEqual(['.in-progress', '.used', b.key].sort());
    expect(fs.readdirSync(path.join(d, 'built', '.used'))).toEqual([b.key]);
    expect(cache.pruneUnused(0)).toEqual([]);
    // the removed set is built again on its next use, the same
    const again = await cache.ensureBuilt(recipe(true));
    expect(again).toMatchObject({ key: a.key, cached: false });
    expect(again.meta.inputs).toEqual(a.meta.inputs);
    // with a deployment store the data directory's built sets are the cache's business: nothing removed
    const stored = new BuiltSamplesCache(new DataDir(d, { store: {} as never, prefix: '', url: 'file:///x/', cache: null }), {
      threadScript: null,
    });
    age(b.key, 20 * day);
    expect(stored.pruneUnused(day)).toEqual([]);
    expect(fs.existsSync(path.join(d, 'built', b.key))).toBe(true);
  }, 60_000);
});

describe('BuiltSamplesCache.stream: a fit with an in-order first epoch starts on the shards of a build still running', () => {
  let big: string;
  const streamRecipe = (): ModelRecipe => ({
    ...recipe(true),
    sampleFile: path.join('in', 'big.parquet'),
    testFrom: 130_000,
    features: [
      { name: 'a', kind: 'numeric', source: { kind: 'column' } },
      { name: 'b', kind: 'numeric', source: { kind: 'column' } },
      { name: 'c', kind: 'categorical', source: { kind: 'column' } },
    ],
    training: trainingSchema.parse({ firstEpoch: 'inOrder', epochs: 3, seed: 5 }),
  });
  const copyIn = (name: string) => {
    const d = fs.mkdtempSync(path.join(root, name));
    fs.mkdirSync(path.join(d, 'in'));
    fs.copyFileSync(big, path.join(d, 'in', 'big.parquet'));
    return d;
  };

  beforeAll(async () => {
    big = path.join(root, 'big.parquet');
    const instance = await DuckDBInstance.create(':memory:');
    const con = await instance.connect();
    try {
      // 160,000 rows in time order; the label leans on a, b and c
      await con.run(
        `COPY (SELECT i AS ts, a, b, c, CAST((hash(i) % 1000)::INT < 1000 / (1 + exp(-(2 * a - 2 * b + (c = 'x')::INT - 0.3))) AS INTEGER) AS click FROM (
            SELECT i, ((hash(i * 3) % 2000)::INT) / 1000.0 - 1 AS a, ((hash(i * 7) % 2000)::INT) / 1000.0 - 1 AS b,
              ['x', 'y', 'z'][(1 + hash(i * 11) % 3)::INT] AS c
            FROM range(160000) r(i)))
          TO '${big}' (FORMAT parquet)`,
      );
    } finally {
      con.closeSync();
      instance.closeSync();
    }
  }, 60_000);

  it('the first chunk trains while the last range is unwritten, and the model is the one the finished set gives', async () => {
    const { dir: bundle, script } = await bundleThreadScript(path.join(__dirname, '../../../samples/src/build/build-thread.ts'));
    try {
      const d = copyIn('stream-');
      const r = streamRecipe();
      let chunkStarted!: () => void;
      const started = new Promise<boolean>((resolve) => (chunkStarted = () => resolve(true)));
      let lastHeldUntilChunk: boolean | null = null;
      const cache = new BuiltSamplesCache(new DataDir(d), {
        threads: 2,
        threadScript: script,
        rangeRows: 8192,
        duckdbMemoryMb: 128,
        // the last range waits (up to a minute) for the fit's first chunk before it is written
        beforeRangeWrite: async (i, n) => {
          if (i === n - 1)
            lastHeldUntilChunk = await Promise.race([started, new Promise<boolean>((res) => setTimeout(() => res(false), 60_000))]);
        },
      });
      const s = await cache.stream(r);
      expect('streamed' in s).toBe(true);
      const streamed = s as StreamedSet;
      const chunks: number[] = [];
      const trainer = new ModelTrainer(new DataDir(d), { backend: 'cpu', threads: 1 });
      const a = await trainer.trainOrReuse(streamed, r.architecture, r.training, {
        onChunk: (c, n) => {
          chunks.push(n);
          if (c === 0) chunkStarted();
        },
      });
      expect(lastHeldUntilChunk).toBe(true);
      expect(chunks.length).toBeGreaterThanOrEqual(2); // the first epoch in more than one chunk
      const whole = await streamed.done;
      expect(whole.key).toBe(streamed.key);
      expect(whole.cached).toBe(false);
      expect(streamed.train.rows).toBe(whole.train.rows);
      expect(streamed.inputs).toEqual(whole.inputs);
      expect(a.metrics.epochs).toBeGreaterThanOrEqual(2);
      // the same fit on the finished set (read back from disk by a new cache): the same model, bit for bit
      fs.rmSync(path.join(d, 'models'), { recursive: true, force: true });
      const again = await new BuiltSamplesCache(new DataDir(d), { threadScript: null }).stream(r);
      expect('streamed' in again).toBe(false);
      const b = await new ModelTrainer(new DataDir(d), { backend: 'cpu', threads: 1 }).trainOrReuse(again, r.architecture, r.training);
      expect(b.key).toBe(a.key);
      expect(Array.from(b.predictions)).toEqual(Array.from(a.predictions));
      expect(b.metrics.auc).toBe(a.metrics.auc);
      expect(b.metrics.steps).toBe(a.metrics.steps);
      expect(a.metrics.auc).toBeGreaterThan(0.6);
      // and it is not the shuffled first epoch's model
      const shuffled = await trainer.trainOrReuse(again, r.architecture, { ...r.training, firstEpoch: 'shuffled' });
      expect(shuffled.key).not.toBe(a.key);
    } finally {
      fs.rmSync(bundle, { recursive: true, force: true });
    }
  }, 120_000);

  it('a build that fails after its plan fails the fit that waits on it, and leaves nothing under built/ or models/', async () => {
    const d = copyIn('stream-fail-');
    const r = streamRecipe();
    const cache = new BuiltSamplesCache(new DataDir(d), {
      threadScript: null,
      rangeRows: 8192,
      beforeRangeWrite: async (i) => {
        if (i === 3) throw new Error('disk full (test)');
      },
    });
    const s = await cache.stream(r);
    expect('streamed' in s).toBe(true);
    const trainer = new ModelTrainer(new DataDir(d), { backend: 'cpu', threads: 1 });
    await expect(trainer.trainOrReuse(s, r.architecture, r.training)).rejects.toThrow(/disk full \(test\)/);
    await expect((s as StreamedSet).done).rejects.toThrow(/disk full/);
    expect(fs.readdirSync(path.join(d, 'built'))).toEqual([]);
    expect(fs.existsSync(path.join(d, 'models')) ? fs.readdirSync(path.join(d, 'models')) : []).toEqual([]);
  }, 60_000);
});

