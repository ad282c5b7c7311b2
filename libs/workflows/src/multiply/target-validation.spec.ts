import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataDir } from '@abacus/catalog';
import { FileStore } from '@abacus/store';
import type { ColumnarDataset } from '@abacus/runtime';
import { UNION_DOMAIN, UNION_LABEL, UNION_TIME } from '@abacus/samples';
import { BuiltSamplesCache, inMemory, readIdSpaces } from '../model/built-samples.cache';
import { architectureSchema, trainingSchema, type ModelRecipe, type ResolvedFeature } from '../model/model-recipe.schema';
import type { UnionPartParams } from './multiply-experiment.schema';
import { concatRows, isShardDataset, materialize } from '@abacus/runtime';
import { splitByDomain } from './multiply-trial.handler';
import { carveTargetValidation } from './target-validation';
import { ensureUnion, unionFile } from './union-samples';

let root: string;
let dataDir: DataDir;
const TEST_FROM = 120;

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-mval-'));
  dataDir = new DataDir(root);
  fs.mkdirSync(path.join(root, 'in'), { recursive: true });
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  try {
    // v identifies a row; t repeats its time as a feature. Times repeat (ties) and are written out of order.
    await con.run(
      `COPY (SELECT i AS v, (i * 37) % 150 AS ts, CAST((i * 37) % 150 AS DOUBLE) AS t, ['a', 'b', 'c'][1 + i % 3] AS x,
          CAST((i * 13) % 5 < 2 AS INTEGER) AS click FROM range(200) r(i))
        TO '${path.join(root, 'in', 'target.parquet')}' (FORMAT parquet)`,
    );
    await con.run(
      `COPY (SELECT 1000 + i AS v, (i * 53) % 170 AS ts, CAST((i * 53) % 170 AS DOUBLE) AS t, ['b', 'c', 'd'][1 + i % 3] AS x,
          CAST((i * 7) % 3 = 0 AS INTEGER) AS click FROM range(300) r(i))
        TO '${path.join(root, 'in', 'source.parquet')}' (FORMAT parquet)`,
    );
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}, 60_000);

afterAll(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

const part = (domain: string, file: string): UnionPartParams => ({
  domain,
  sampleSetId: domain,
  name: domain,
  businessLine: 'x',
  file: path.join('in', file),
  dataVersion: null,
  label: 'click',
  positive: null,
  time: 'ts',
});
const columns = ['v', 't', 'x'];
const features: ResolvedFeature[] = [
  { name: 'v', kind: 'numeric', source: { kind: 'column' } },
  { name: 't', kind: 'numeric', source: { kind: 'column' } },
  { name: 'x', kind: 'categorical', source: { kind: 'column' } },
];
const recipe = (sampleFile: string, union: boolean, domain: boolean): ModelRecipe => ({
  sampleSetId: 's',
  sampleFile,
  label: union ? UNION_LABEL : 'click',
  positive: null,
  time: union ? UNION_TIME : 'ts',
  testFrom: TEST_FROM,
  filter: null,
  features: domain ? [...features, { name: UNION_DOMAIN, kind: 'categorical', source: { kind: 'column' } }] : features,
  architecture: architectureSchema.parse({}),
  training: trainingSchema.parse({}),
  modelId: null,
});

/** a numeric column of a dataset */
const col = (d: ColumnarDataset, name: string): number[] => {
  const k = d.numericNames.indexOf(name);
  const w = d.numericNames.length;
  return Array.from({ length: d.rows }, (_, r) => d.numeric[r * w + k]);
};

async function unionBuilt(parts: UnionPartParams[], domain: boolean) {
  const rel = unionFile(parts, columns, TEST_FROM);
  const union = await ensureUnion(dataDir, rel, parts, columns, TEST_FROM);
  const built = await inMemory(await new BuiltSamplesCache(dataDir).get(recipe(rel, true, domain)));
  let targetId: number | null = null;
  if (domain) {
    const space = readIdSpaces(dataDir, built)[UNION_DOMAIN];
    targetId = (space.kind === 'dictionary' ? space.values.map(String).indexOf('target') : -1) + 1;
  }
  return { union, raw: built, built: await carveTargetValidation(built, union.validation, targetId), targetId };
}

describe("multiply's validation split", () => {
  it('is the same target rows for the baseline and a union arm, none fitted on, borrowed rows only before its start', async () => {
    const target = part('target', 'target.parquet');
    const source = part('feed/s', 'source.parquet');
    const base = await unionBuilt([target], false);
    const arm = await unionBuilt([target, source], true);
    expect(base.union.validation).toEqual(arm.union.validation);
    const { from, rows } = arm.union.validation;
    expect(rows).toBe(Math.round(0.2 * (base.built.train.rows + base.built.validation.rows)));
    // identical validation rows (v, label) in the same order, for both
    expect(col(arm.built.validation, 'v')).toEqual(col(base.built.validation, 'v'));
    expect([...arm.built.validation.labels]).toEqual([...base.built.validation.labels]);
    expect(arm.built.validation.rows).toBe(rows);
    // the cache's own carve of the union mixed borrowed rows into validation: that is what changed
    expect(col(arm.raw.validation, 'v').some((v) => v >= 1000)).toBe(true);
    // validation: the target's rows at or after the start; fitted rows: none of them, and borrowed rows only before it
    expect(col(arm.built.validation, 'v').every((v) => v < 1000)).toBe(true);
    expect(Math.min(...col(arm.built.validation, 't'))).toBe(from);
    const valIds = new Set(col(arm.built.validation, 'v'));
    const fitV = col(arm.built.train, 'v');
    const fitT = col(arm.built.train, 't');
    expect(fitV.some((v) => valIds.has(v))).toBe(false);
    expect(fitV.some((v) => v >= 1000)).toBe(true);
    for (let r = 0; r < fitV.length; r++) if (fitV[r] >= 1000) expect(fitT[r]).toBeLessThan(from);
    // every target training row is fitted on or validation; borrowed ones as kept by the union file
    const kept = arm.union.parts[1].kept;
    expect(arm.built.train.rows).toBe(base.built.train.rows + kept);
    expect(arm.union.parts[1].droppedAtOrAfterValidationStart).toBeGreaterThan(0);
    // the test rows are untouched
    expect(col(arm.built.test, 'v')).toEqual(col(base.built.test, 'v'));
    // the model cache tells the carve apart
    expect(arm.built.key).not.toBe(arm.raw.key);
  });

  it('for the target alone is the carve of a plain training on the target set (the baseline is that model)', async () => {
    const base = await unionBuilt([part('target', 'target.parquet')], false);
    const plain = await inMemory(
      await new BuiltSamplesCache(dataDir).get(recipe(path.join('in', 'target.parquet'), false, false)),
    );
    expect(col(base.built.validation, 'v')).toEqual(col(plain.validation, 'v'));
    expect(col(base.built.train, 'v')).toEqual(col(plain.train, 'v'));
    expect([...base.built.train.labels]).toEqual([...plain.train.labels]);
  });

  it('carves views of the built shards (nothing loaded) to the same rows as in memory', async () => {
    const parts = [part('target', 'target.parquet'), part('feed/s', 'source.parquet')];
    const arm = await unionBuilt(parts, true);
    const views = await new BuiltSamplesCache(dataDir).get(recipe(unionFile(parts, columns, TEST_FROM), true, true));
    const carved = await carveTargetValidation(views, arm.union.validation, arm.targetId);
    expect(isShardDataset(carved.train) && isShardDataset(carved.validation)).toBe(true);
    expect(carved.key).toBe(arm.built.key);
    for (const split of ['train', 'validation'] as const) {
      const rows = await materialize(carved[split]);
      expect(col(rows, 'v')).toEqual(col(arm.built[split], 'v'));
      expect([...rows.labels]).toEqual([...arm.built[split].labels]);
    }
  });

  it('splits the fitted rows into borrowed and target rows as shard files of a scratch folder, the rows of the copy in memory', async () => {
    const parts = [part('target', 'target.parquet'), part('feed/s', 'source.parquet')];
    const arm = await unionBuilt(parts, true);
    const views = await new BuiltSamplesCache(dataDir).get(recipe(unionFile(parts, columns, TEST_FROM), true, true));
    const carved = await carveTargetValidation(views, arm.union.validation, arm.targetId);
    const inMem = await splitByDomain(carved);
    const scratch = dataDir.scratch('split-test');
    try {
      const seen: string[] = [];
      const onDisk = await splitByDomain(carved, {
        scratch: scratch.dir,
        onProgress: (f, m) => seen.push(`${f.toFixed(2)} ${m}`),
        chunkRows: 37,
      });
      expect(isShardDataset(onDisk.pretrain) && isShardDataset(onDisk.finetune)).toBe(true);
      expect(isShardDataset(inMem.pretrain) || isShardDataset(inMem.finetune)).toBe(false);
      // the split read 37 rows at a time: a shard file per chunk and kind, in the scratch folder
      const files = fs.readdirSync(scratch.dir).sort();
      const chunks = Math.ceil(carved.train.rows / 37);
      expect(files.length).toBeGreaterThan(chunks);
      expect(files.length).toBeLessThanOrEqual(2 * chunks);
      expect(files.every((f) => /^(pretrain|finetune)-\d{6}\.shard$/.test(f))).toBe(true);
      expect(seen.at(-1)).toBe(
        `1.00 copying the pretraining and fine-tuning rows to shards (${carved.train.rows} of ${carved.train.rows})`,
      );
      for (const k of ['pretrain', 'finetune'] as const) {
        const a = await materialize(onDisk[k]);
        const b = inMem[k] as ColumnarDataset;
        expect(a.rows).toBe(b.rows);
        expect(a.slots.map((s) => s.name)).toEqual(['x']); // the domain is not a column of either
        expect(col(a, 'v')).toEqual(col(b, 'v'));
        expect([...a.labels]).toEqual([...b.labels]);
        expect([...a.slots[0].ids]).toEqual([...b.slots[0].ids]);
        expect([...a.slots[0].offsets]).toEqual([...b.slots[0].offsets]);
      }
      // borrowed rows are the source's (v >= 1000), the fine-tuning rows the target's
      expect(col(await materialize(onDisk.pretrain), 'v').every((v) => v >= 1000)).toBe(true);
      expect(col(await materialize(onDisk.finetune), 'v').every((v) => v < 1000)).toBe(true);
      expect(onDisk.pretrain.rows + onDisk.finetune.rows).toBe(carved.train.rows);
      expect(onDisk.tag).toBe(inMem.tag);
    } finally {
      scratch.remove();
    }
    expect(fs.existsSync(scratch.dir)).toBe(false);
  });

  it('refuses a count that is not the carve of the target rows, or a borrowed row among the last ones', async () => {
    const arm = await unionBuilt([part('target', 'target.parquet'), part('feed/s', 'source.parquet')], true);
    const v = arm.union.validation;
    await expect(carveTargetValidation(arm.raw, { ...v, rows: v.rows + 1 }, arm.targetId)).rejects.toThrow(
      /not the target's|expected/,
    );
    await expect(carveTargetValidation(arm.raw, { ...v, rows: v.rows - 1 }, arm.targetId)).rejects.toThrow(/expected/);
    // the borrowed domain's id in place of the target's
    await expect(carveTargetValidation(arm.raw, v, arm.targetId === 1 ? 2 : 1)).rejects.toThrow(/not the target's/);
    await expect(carveTargetValidation(arm.raw, v, null)).rejects.toThrow(/no target id/);
  });
});

describe('the union file with a deployment store', () => {
  it('is written once: another host reads it and its counts from the store instead of building its own', async () => {
    const store = new FileStore(path.join(root, 'store'));
    const host = (name: string) => new DataDir(path.join(root, name), { store, prefix: '', url: store.url, cache: null });
    const a = host('host-a');
    const b = host('host-b');
    const parts = [part('target', 'target.parquet'), part('feed/s', 'source.parquet')];
    // host a holds the inputs; host b has none of them
    fs.mkdirSync(a.abs('in'), { recursive: true });
    for (const f of ['target.parquet', 'source.parquet']) fs.copyFileSync(path.join(root, 'in', f), path.join(a.abs('in'), f));
    const rel = unionFile(parts, columns, TEST_FROM);
    const first = await ensureUnion(a, rel, parts, columns, TEST_FROM);
    expect(first.cached).toBe(false);
    const other = await ensureUnion(b, rel, parts, columns, TEST_FROM);
    expect(other.cached).toBe(true);
    expect({ ...other, cached: false }).toEqual(first);
    expect(fs.readFileSync(b.abs(rel)).equals(fs.readFileSync(a.abs(rel)))).toBe(true);
    expect(fs.existsSync(b.abs('in'))).toBe(false);
  });
});

describe('concatRows', () => {
  it('appends rows, slot lists and offsets included', () => {
    const a: ColumnarDataset = {
      rows: 2,
      numericNames: ['n'],
      numeric: Float32Array.from([1, 2]),
      slots: [{ name: 's', ids: Int32Array.from([5, 6, 7]), offsets: Int32Array.from([0, 2, 3]) }],
      labels: Float32Array.from([0, 1]),
    };
    const b: ColumnarDataset = {
      rows: 2,
      numericNames: ['n'],
      numeric: Float32Array.from([3, 4]),
      slots: [{ name: 's', ids: Int32Array.from([8]), offsets: Int32Array.from([0, 0, 1]) }],
      labels: Float32Array.from([1, 1]),
    };
    const c = concatRows(a, b);
    expect(c.rows).toBe(4);
    expect([...c.numeric]).toEqual([1, 2, 3, 4]);
    expect([...c.labels]).toEqual([0, 1, 1, 1]);
    expect([...c.slots[0].ids]).toEqual([5, 6, 7, 8]);
    expect([...c.slots[0].offsets]).toEqual([0, 2, 3, 3, 4]);
    expect(() => concatRows(a, { ...b, numericNames: ['m'] })).toThrow(/different columns/);
  });
});
