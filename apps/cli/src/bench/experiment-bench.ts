import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { loadConfig } from '@abacus/configs';
import { loadColumns, simulateWorld, writeWorld, type GroundTruthFeature } from '@abacus/samples';
import { StoreRegistry, storeSettings } from '@abacus/store';
import type { ApiClient } from '../api-client';
import { CliError } from '../commands/command.types';
import { noiseColumn } from './bench-plan';
import { TERMINAL } from './private-platform';

/** The line every experiment bench works in. */
export const BENCH_LINE = 'bench';

export interface BenchSamplesOptions {
  rows: number;
  /** the table's name in the by-reference folder: bench-<rows>x<features>-<seed> */
  features: number;
  seed: number;
  /**
   * register the samples by reference instead of uploading them: written under this folder (a path
   * the api and workers see) as hive partitions by day (day=N/), registered as file://<folder>/; or,
   * given s3://bucket/prefix/, written locally and uploaded there (the store settings of this
   * process's configuration: ABACUS_S3_*, ABACUS_STORES_FILE, AWS_*), registered as that URL
   */
  registerAt?: string;
  /** impressions simulated at most at once (default 10M): a larger set is that world repeated in later periods */
  simTileRows?: number;
  /** per-impression noise columns (bench_noise_1 …) the table needs, given the simulator's features */
  noiseColumns: (catalog: readonly GroundTruthFeature[]) => number;
  onStatus?: (line: string) => void;
  /** the models' training.firstEpoch (default: the platform's) */
  firstEpoch?: 'shuffled' | 'inOrder';
}

/** The `training` of a bench's model spec: the first epoch asked for, if any. */
export function benchTraining(o: Pick<BenchSamplesOptions, 'firstEpoch'>): { training?: { firstEpoch: 'shuffled' | 'inOrder' } } {
  return o.firstEpoch ? { training: { firstEpoch: o.firstEpoch } } : {};
}

/** A bench table simulated, written and in the platform as a sample set of the bench line. */
export interface BenchSamples {
  sampleSet: { id: string; rowCount: number };
  /** the simulator's features (ground truth: role, planted effect, kind, declared costs) */
  catalog: readonly GroundTruthFeature[];
  /** simulating and writing the table */
  simulateMs: number;
  /** uploading or registering it (an upload to a store included) */
  importMs: number;
  /** the upload to an s3:// store alone */
  uploadMs: number;
  s3: boolean;
  /** impressions the simulator held (one period) */
  simulatedRows: number;
  periods: number;
}

/**
 * `fn` on one table of every line's samples of a simulated world, with `noiseColumns` extra
 * per-impression noise feature columns, imported through the API (or registered by reference) into
 * the bench line; the local files are removed when `fn` is done.
 */
export async function withBenchSamples<T>(
  api: ApiClient,
  o: BenchSamplesOptions,
  fn: (s: BenchSamples) => Promise<T>,
): Promise<T> {
  const log = o.onStatus ?? (() => undefined);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-bench-'));
  try {
    const t0 = Date.now();
    // the simulator holds its world in memory: a set larger than simTileRows is one world of
    // rows / tiles impressions repeated in `tiles` consecutive periods, each later tile with fresh
    // impression ids and its clicks drawn again from the planted click model (the same ground truth,
    // new label noise: the test period is not a copy of a training one)
    const tileMax = o.simTileRows ?? 10_000_000;
    const tiles = Math.ceil(o.rows / tileMax);
    if (tiles > 1 && !o.registerAt)
      throw new CliError(
        `--rows over ${tileMax} (--sim-tile-rows) needs --register-at: a set that large is registered by reference, not uploaded`,
      );
    const tileRows = Math.ceil(o.rows / tiles);
    log(`simulating ${tileRows} impressions${tiles > 1 ? ` (repeated in ${tiles} periods)` : ''}`);
    const world = simulateWorld({ seed: o.seed, rows: tileRows });
    await writeWorld(world, dir);
    const trueLogit = tiles > 1 ? world.flat.trueLogit : null;
    const worldRows = world.impressions.impressionId.length;
    const extra = o.noiseColumns(world.groundTruth.features);
    // one table of every line's samples; features past the simulator's own are per-impression noise
    const s3 = o.registerAt?.startsWith('s3://') ?? false;
    const file = o.registerAt
      ? s3
        ? path.join(dir, 'partitions')
        : path.resolve(o.registerAt, `bench-${o.rows}x${o.features}-${o.seed}`)
      : path.join(dir, 'bench-samples.parquet');
    if (o.registerAt) {
      fs.rmSync(file, { recursive: true, force: true });
      fs.mkdirSync(path.dirname(file), { recursive: true });
    }
    const db = await DuckDBInstance.create(':memory:', { temp_directory: path.join(dir, 'spill') });
    const conn = await db.connect();
    const noise = Array.from(
      { length: extra },
      (_, k) => `, (hash(impression_id, ${k + 1}) % 10000) / 10000.0 AS ${noiseColumn(k + 1)}`,
    ).join('');
    const samples = `read_parquet('${path.join(dir, 'samples', '*.parquet').replace(/'/g, "''")}')`;
    if (trueLogit) {
      await loadColumns(conn, 'logits', [
        { name: 'impression_id', type: 'INTEGER', data: Int32Array.from({ length: worldRows }, (_, r) => r) },
        { name: 'logit', type: 'DOUBLE', data: trueLogit },
      ]);
    }
    // whole days, so a tile's day partitions follow the last one of the tile before
    const [[maxTs]] = await (await conn.run(`SELECT max(ts) FROM ${samples}`)).getRows();
    const span = Math.ceil((Number(maxTs) + 1) / 86400) * 86400;
    for (let k = 0; k < tiles; k++) {
      // tile k: its impression ids after those of the tiles before, its times k periods later
      const tile =
        k === 0
          ? samples
          : `(SELECT s.* REPLACE (s.impression_id + ${k * worldRows} AS impression_id, s.ts + ${k * span} AS ts,
                CAST((hash(s.impression_id, ${k}, 7) % 1000000007) / 1000000007.0 < 1 / (1 + exp(-l.logit)) AS INTEGER) AS click)
              FROM ${samples} s JOIN logits l ON l.impression_id = s.impression_id)`;
      const select = `SELECT *${noise}${o.registerAt ? ', CAST(floor(ts / 86400) AS INTEGER) AS day' : ''} FROM ${tile} ORDER BY ts, impression_id`;
      if (tiles > 1) log(`writing period ${k + 1} of ${tiles}`);
      await conn.run(
        `COPY (${select}) TO '${file.replace(/'/g, "''")}' (FORMAT parquet${o.registerAt ? `, PARTITION_BY (day)${tiles > 1 ? `, FILENAME_PATTERN 'tile${k}_{uuid}', APPEND` : ''}` : ''})`,
      );
    }
    conn.closeSync();
    db.closeSync();
    const simulateMs = Date.now() - t0;

    const lines = await api.get<{ name: string }[]>('/business-lines');
    if (!lines.some((l) => l.name === BENCH_LINE))
      await api.post('/business-lines', { name: BENCH_LINE, description: 'benchmarks' });
    const name = `bench-${Date.now()}`;
    const t1 = Date.now();
    let ss: { id: string; rowCount: number };
    let url = `file://${file}/`;
    if (o.registerAt && s3) {
      const base = `${o.registerAt.replace(/\/?$/, '/')}bench-${o.rows}x${o.features}-${o.seed}/`;
      const stores = new StoreRegistry(storeSettings(loadConfig()));
      const { store, prefix } = stores.resolve(base);
      const walk = (d: string): string[] =>
        fs
          .readdirSync(d, { withFileTypes: true })
          .flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
      const files = walk(file);
      const old = await store.list(prefix);
      if (old.length) await store.remove(old.map((x) => x.key));
      log(`uploading ${files.length} Parquet file(s) to ${base}`);
      for (const f of files)
        await store.upload(`${prefix}${path.relative(file, f).split(path.sep).join('/')}`, fs.createReadStream(f));
      stores.close();
      url = base;
    }
    const uploadMs = Date.now() - t1;
    if (o.registerAt) {
      log(`registering ${url} by reference`);
      ss = await api.post<{ id: string; rowCount: number }>('/sample-sets/register', {
        url,
        name,
        businessLine: BENCH_LINE,
        label: 'click',
        time: 'ts',
        keys: ['impression_id', 'user_id', 'item_id', 'context_id', 'domain'],
      });
    } else {
      log('importing the samples through the API');
      ss = await api.upload<{ id: string; rowCount: number }>('/sample-sets', file, {
        name,
        businessLine: BENCH_LINE,
        label: 'click',
        time: 'ts',
        keys: 'impression_id,user_id,item_id,context_id,domain',
      });
    }
    const importMs = Date.now() - t1;
    return await fn({
      sampleSet: ss,
      catalog: world.groundTruth.features,
      simulateMs,
      importMs,
      uploadMs,
      s3,
      simulatedRows: worldRows,
      periods: tiles,
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The `setup` part of a bench's JSON: simulating and importing the table. */
export function benchSetup(s: BenchSamples): Record<string, number> {
  return {
    simulateMs: s.simulateMs,
    importMs: s.importMs,
    simulatedRows: s.simulatedRows,
    periods: s.periods,
    ...(s.s3 ? { uploadToStoreMs: s.uploadMs } : {}),
  };
}

/**
 * Submits one experiment (POST /experiments) and polls it every 500 ms until it ends; a failed or
 * cancelled one is an error. `clientWallMs`: submit → seen ended, at this client.
 */
export async function runBenchExperiment<E extends { id: string; status: string; error: string | null }>(
  api: ApiClient,
  body: Record<string, unknown>,
): Promise<{ experiment: E; clientWallMs: number }> {
  const t2 = Date.now();
  let e = await api.post<E>('/experiments', body);
  for (;;) {
    e = await api.get<E>(`/experiments/${e.id}`);
    if (TERMINAL.includes(e.status)) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const clientWallMs = Date.now() - t2;
  if (e.status !== 'succeeded') throw new CliError(`the bench experiment ${e.id} ${e.status}: ${e.error ?? ''}`);
  return { experiment: e, clientWallMs };
}

/** The machine a bench ran on (its client: with --private, the platform's too). */
export function benchMachine(): { cpus: number; cpu: string; memoryGiB: number } {
  return { cpus: os.cpus().length, cpu: os.cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(os.totalmem() / 2 ** 30) };
}
