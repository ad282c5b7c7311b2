/**
 * Peak memory of a sample build by stage, against rows (a script, not part of the unit suite):
 *   npx esbuild libs/workflows/src/model/built-samples.bench.ts --bundle --platform=node --packages=external \
 *     --outfile=dist-bench/built-samples.bench.js && node dist-bench/built-samples.bench.js ROWS [NUMERIC=85] [SLOTS=15] [DIR] [DUCKDB_MB=2048]
 * Writes a synthetic Parquet set (time, user, label, NUMERIC numeric columns with missing values,
 * SLOTS categorical / multi-id columns), builds it through BuiltSamplesCache with the worker's defaults
 * and prints one JSON line: rows, seconds and the process's peak RSS per stage, and the built size.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { DataDir } from '@abacus/catalog';
import { BuiltSamplesCache } from './built-samples.cache';
import { architectureSchema, trainingSchema, type ModelRecipe, type ResolvedFeature } from './model-recipe.schema';

async function writeSet(file: string, rows: number, numeric: number, slots: number): Promise<void> {
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
      `COPY (SELECT ${cols.join(', ')} FROM range(${rows}) r(i)) TO '${file}' (FORMAT parquet, ROW_GROUP_SIZE 122880)`,
    );
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

async function main(): Promise<void> {
  const rows = Number(process.argv[2] ?? 1_000_000);
  const numeric = Number(process.argv[3] ?? 85);
  const slots = Number(process.argv[4] ?? 15);
  const duckdbMemoryMb = Number(process.argv[6] ?? 2048);
  const root = process.argv[5] ?? fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-build-mem-'));
  fs.mkdirSync(path.join(root, 'in'), { recursive: true });
  const file = path.join(root, 'in', `set-${rows}x${numeric + slots}.parquet`);
  const tw = performance.now();
  if (!fs.existsSync(file)) await writeSet(file, rows, numeric, slots);
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
  const cache = new BuiltSamplesCache(new DataDir(root), {
    threads,
    duckdbMemoryMb: duckdbMemoryMb,
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
      buildS: +((performance.now() - t0) / 1000).toFixed(1),
      maxRssGiB: +(process.resourceUsage().maxRSS / 2 ** 20).toFixed(2),
      stages,
      builtGiB: +(bytes(dir) / 2 ** 30).toFixed(2),
      parquetGiB: +(fs.statSync(file).size / 2 ** 30).toFixed(2),
      timings: built.meta.timings,
    }),
  );
  fs.rmSync(path.join(root, 'built'), { recursive: true, force: true });
}

void main();
