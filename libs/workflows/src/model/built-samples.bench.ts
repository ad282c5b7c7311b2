/**
 * Peak memory of a sample build by stage, against rows (a script, not part of the unit suite):
 *   npx esbuild libs/workflows/src/model/built-samples.bench.ts --bundle --platform=node --packages=external \
 *     --outfile=dist-bench/built-samples.bench.js && node dist-bench/built-samples.bench.js ROWS [NUMERIC=85] [SLOTS=15] [DIR] [DUCKDB_MB=2048] [--reference] [--iv] [--epoch]
 * Writes a synthetic Parquet set (time, user, label, NUMERIC numeric columns with missing values,
 * SLOTS categorical / multi-id columns), builds it through BuiltSamplesCache with the worker's defaults
 * and prints one JSON line: rows, seconds and the process's peak RSS per stage, and the built size.
 *
 * --reference (after the positional arguments): the set is written as day=N/ partitions (8 files)
 * and read as a set registered by reference on a file:// store is (SampleSetData: listing, the host's
 * cache, a folder of links); --iv: then the streaming IV/WOE scoring of every feature, as a score
 * trial runs it; --epoch: then one training epoch on the CPU backend from the built shards and an
 * evaluation of the test split. Each is a stage of its own in the JSON.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { DataDir, SampleSetData } from '@abacus/catalog';
import type { SampleSetEntity } from '@abacus/data';
import { RuntimeModel } from '@abacus/runtime';
import { scoreFileStreaming } from '@abacus/scoring';
import { FileStore, ObjectCache, StoreRegistry } from '@abacus/store';
import { BuiltSamplesCache } from './built-samples.cache';
import { architectureSchema, trainingSchema, type ModelRecipe, type ResolvedFeature } from './model-recipe.schema';

async function writeSet(file: string, rows: number, numeric: number, slots: number, partitioned: boolean): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:', {
    memory_limit: '1GB',
    temp_directory: path.join(path.dirname(file), 'spill'),
  });
  const con = await instance.connect();
  const cols = [
    'i AS id',
    '(i * 7919) % 8640000 AS ts',
    '(i * 2654435761) % 1000003 AS user_id',
    'CAST(hash(i) % 100 < 8 + 10 * (((i * 37) % 100) / 100.0) AS INTEGER) AS click',
  ];
  for (let j = 0; j < numeric; j++)
    cols.push(`CASE WHEN hash(i, ${j}) % 17 = 0 THEN NULL ELSE ((hash(i * ${j + 3}) % 100000) / 1000.0) END AS x${j}`);
  for (let j = 0; j < slots; j++)
    cols.push(
      j % 3 === 2
        ? `[CAST(hash(i, ${j}) % 5000 AS INTEGER), CAST(hash(i, ${j + 100}) % 5000 AS INTEGER)] AS s${j}`
        : `'v' || (hash(i, ${j}) % ${j % 3 === 0 ? 1000 : 50}) AS s${j}`,
    );
  try {
    await con.run(
      partitioned
        ? `COPY (SELECT ${cols.join(', ')}, CAST(((i * 7919) % 8640000) // 1080000 AS INTEGER) AS day FROM range(${rows}) r(i)) TO '${file}' (FORMAT parquet, PARTITION_BY (day), ROW_GROUP_SIZE 122880)`
        : `COPY (SELECT ${cols.join(', ')} FROM range(${rows}) r(i)) TO '${file}' (FORMAT parquet, ROW_GROUP_SIZE 122880)`,
    );
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const rows = Number(args[0] ?? 1_000_000);
  const numeric = Number(args[1] ?? 85);
  const slots = Number(args[2] ?? 15);
  const duckdbMemoryMb = Number(args[4] ?? 2048);
  const root = args[3] ?? fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-build-mem-'));
  fs.mkdirSync(path.join(root, 'in'), { recursive: true });
  const reference = process.argv.includes('--reference');
  const file = path.join(root, 'in', `set-${rows}x${numeric + slots}${reference ? '' : '.parquet'}`);
  const tw = performance.now();
  if (!fs.existsSync(file)) await writeSet(file, rows, numeric, slots, reference);
  const writeS = (performance.now() - tw) / 1000;
  const features: ResolvedFeature[] = [
    ...Array.from({ length: numeric }, (_, j) => ({
      name: `x${j}`,
      kind: 'numeric' as const,
      source: { kind: 'column' as const },
    })),
    ...Array.from({ length: slots }, (_, j) => ({
      name: `s${j}`,
      kind: j % 3 === 2 ? ('multi_id' as const) : ('categorical' as const),
      source: { kind: 'column' as const },
    })),
  ];
  const recipe: ModelRecipe = {
    sampleSetId: 'bench',
    sampleFile: path.relative(root, file),
    label: 'click',
    positive: null,
    time: 'ts',
    testFrom: null,
    filter: null,
    features,
    architecture: architectureSchema.parse({}),
    training: trainingSchema.parse({}),
    modelId: null,
  };
  const threads = Math.min(4, os.availableParallelism());
  const dataDir = new DataDir(root);
  // a set registered by reference on a file:// store, read as the worker reads one
  const samples = new SampleSetData(dataDir, new StoreRegistry(), new ObjectCache(path.join(root, 'cache'), 1e12));
  const objects = reference ? await new FileStore(file).list('') : [];
  const entity = {
    id: '00000000-0000-0000-0000-00000000bead',
    name: 'bench',
    files: [],
    location: `file://${file}/`,
    objects,
  } as unknown as SampleSetEntity;
  if (reference) {
    recipe.sampleFile = `file://${file}/`;
    recipe.sampleVersion = `bench-${rows}x${numeric + slots}`;
  }
  const cache = new BuiltSamplesCache(dataDir, {
    threads,
    duckdbMemoryMb: duckdbMemoryMb,
    ...(reference
      ? { openSamples: (_r: ModelRecipe, onProgress?: (f: number, m: string) => void) => samples.open(entity, onProgress) }
      : {}),
  });
  const stages: Record<string, { s: number; peakRssGiB: number }> = {};
  let stage = 'start';
  let stageStart = performance.now();
  let peak = 0;
  const close = () => {
    stages[stage] = { s: +((performance.now() - stageStart) / 1000).toFixed(1), peakRssGiB: +(peak / 2 ** 30).toFixed(2) };
  };
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 100);
  const t0 = performance.now();
  const built = await cache.ensureBuilt(recipe, undefined, (_f, message) => {
    const next = message.startsWith('join') ? 'join' : message;
    if (next === stage) return;
    peak = Math.max(peak, process.memoryUsage.rss());
    close();
    stage = next;
    stageStart = performance.now();
    peak = process.memoryUsage.rss();
  });
  peak = Math.max(peak, process.memoryUsage.rss());
  close();
  const buildS = +((performance.now() - t0) / 1000).toFixed(1);
  const begin = (name: string) => {
    close();
    stage = name;
    stageStart = performance.now();
    peak = process.memoryUsage.rss();
  };
  const extra: Record<string, unknown> = {};
  if (process.argv.includes('--iv')) {
    begin('iv (streaming, every feature)');
    const opened = reference ? await samples.open(entity) : { path: file, release: () => undefined };
    try {
      const scored = await scoreFileStreaming(
        opened.path,
        { label: 'click' },
        { columns: [...features.map((f) => f.name), 'click'], memoryLimitMb: duckdbMemoryMb, tempDir: path.join(root, 'tmp') },
      );
      extra.iv = { rows: scored.rows, features: scored.report.features.length, readMs: scored.readMs, scoreMs: scored.scoreMs };
    } finally {
      opened.release();
    }
  }
  if (process.argv.includes('--epoch')) {
    begin('open built shards');
    const set = await cache.get(recipe);
    begin('train one epoch (cpu)');
    const training = recipe.training;
    const model = RuntimeModel.create(
      {
        numeric: set.inputs.numeric,
        slots: set.inputs.slots,
        pooling: recipe.architecture.pooling,
        embeddingDim: recipe.architecture.embeddingDim,
        wide: recipe.architecture.wide,
        hidden: recipe.architecture.hidden,
        optimizer: {
          dense: { kind: 'adam', lr: training.learningRate },
          sparse: { kind: training.sparseOptimizer, lr: training.sparseLearningRate },
        },
        seed: training.seed,
      },
      { backend: 'cpu' },
    );
    const tt = performance.now();
    const r = await model.train(set.train, { epochs: 1, batchSize: training.batchSize, seed: 1, validationFraction: 0 });
    const trainS = (performance.now() - tt) / 1000;
    begin('evaluate test split (cpu)');
    const ev = await model.evaluate(set.test);
    extra.epoch = {
      trainRows: set.train.rows,
      testRows: set.test.rows,
      batchSize: training.batchSize,
      trainS: +trainS.toFixed(1),
      samplesPerSecond: Math.round(r.samplesPerSecond),
      testAuc: +ev.auc.toFixed(4),
    };
  }
  close();
  clearInterval(timer);
  const dir = path.join(root, built.dir);
  const bytes = (d: string): number =>
    fs
      .readdirSync(d, { withFileTypes: true })
      .reduce((a, e) => a + (e.isDirectory() ? bytes(path.join(d, e.name)) : fs.statSync(path.join(d, e.name)).size), 0);
  console.log(
    JSON.stringify({
      rows,
      features: numeric + slots,
      threads,
      duckdbMemoryMb: duckdbMemoryMb,
      writeSetS: +writeS.toFixed(1),
      buildS,
      reference,
      ...extra,
      maxRssGiB: +(process.resourceUsage().maxRSS / 2 ** 20).toFixed(2),
      stages,
      builtGiB: +(bytes(dir) / 2 ** 30).toFixed(2),
      parquetGiB: +((fs.statSync(file).isDirectory() ? bytes(file) : fs.statSync(file).size) / 2 ** 30).toFixed(2),
      timings: built.meta.timings,
    }),
  );
  fs.rmSync(path.join(root, 'built'), { recursive: true, force: true });
  fs.rmSync(path.join(root, 'cache'), { recursive: true, force: true });
}

void main();
