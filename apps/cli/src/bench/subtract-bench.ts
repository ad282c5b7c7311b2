import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { loadConfig } from '@abacus/configs';
import { loadColumns, simulateWorld, writeWorld } from '@abacus/samples';
import { StoreRegistry, storeSettings } from '@abacus/store';
import type { ApiClient } from '../api-client';
import { CliError } from '../commands/command.types';

interface Trial {
  attempts?: number;
  kind: string;
  status: string;
  startedAt: string | null;
  finishedAt: string | null;
  backend?: string | null;
  metrics: {
    role?: string;
    timings?: Record<string, number> & { build?: unknown };
    curve?: { check: 'permutation' | 'retrain' }[];
    seeds?: number[];
    lookahead?: number;
    perSeed?: { label: string; seed: number; cached: boolean; trainMs?: number; evalMs?: number | null; saveMs?: number | null }[];
    epochs?: number;
    steps?: number;
    trainMs?: number;
    scoredOn?: string;
  } | null;
}

interface Experiment {
  id: string;
  status: string;
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
  trials: Trial[];
  result: { removable?: string[]; full?: { auc: number }; confirmed?: { auc: number } | null } | null;
}

export interface SubtractBenchOptions {
  rows: number;
  features: number;
  backend: 'cpu' | 'cuda';
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
  onStatus?: (line: string) => void;
}

/**
 * End-to-end wall time of one subtract experiment through the API on a simulated world, split by
 * stage from the trials' own timings, so the slowest stage is visible. The worker must run with the
 * backend asked for (ABACUS_RUNTIME_BACKEND); the result reports what the trials actually used.
 */
export async function runSubtractBench(api: ApiClient, o: SubtractBenchOptions): Promise<Record<string, unknown>> {
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
      throw new CliError(`--rows over ${tileMax} (--sim-tile-rows) needs --register-at: a set that large is registered by reference, not uploaded`);
    const tileRows = Math.ceil(o.rows / tiles);
    log(`simulating ${tileRows} impressions${tiles > 1 ? ` (repeated in ${tiles} periods)` : ''}`);
    const world = simulateWorld({ seed: o.seed, rows: tileRows });
    await writeWorld(world, dir);
    const trueLogit = tiles > 1 ? world.flat.trueLogit : null;
    const worldRows = world.impressions.impressionId.length;
    const catalog = world.groundTruth.features.map((f) => f.name);
    const extra = Math.max(0, o.features - catalog.length);
    const features = [...catalog.slice(0, o.features), ...Array.from({ length: extra }, (_, k) => `bench_noise_${k + 1}`)];
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
      (_, k) => `, (hash(impression_id, ${k + 1}) % 10000) / 10000.0 AS bench_noise_${k + 1}`,
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
    if (!lines.some((l) => l.name === 'bench')) await api.post('/business-lines', { name: 'bench', description: 'benchmarks' });
    const name = `bench-${Date.now()}`;
    const t1 = Date.now();
    let ss: { id: string; rowCount: number };
    let url = `file://${file}/`;
    if (o.registerAt && s3) {
      const base = `${o.registerAt.replace(/\/?$/, '/')}bench-${o.rows}x${o.features}-${o.seed}/`;
      const stores = new StoreRegistry(storeSettings(loadConfig()));
      const { store, prefix } = stores.resolve(base);
      const walk = (d: string): string[] =>
        fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
      const files = walk(file);
      const old = await store.list(prefix);
      if (old.length) await store.remove(old.map((x) => x.key));
      log(`uploading ${files.length} Parquet file(s) to ${base}`);
      for (const f of files) await store.upload(`${prefix}${path.relative(file, f).split(path.sep).join('/')}`, fs.createReadStream(f));
      stores.close();
      url = base;
    }
    const uploadMs = Date.now() - t1;
    if (o.registerAt) {
      log(`registering ${url} by reference`);
      ss = await api.post<{ id: string; rowCount: number }>('/sample-sets/register', {
        url,
        name,
        businessLine: 'bench',
        label: 'click',
        time: 'ts',
        keys: ['impression_id', 'user_id', 'item_id', 'context_id', 'domain'],
      });
    } else {
      log('importing the samples through the API');
      ss = await api.upload<{ id: string; rowCount: number }>('/sample-sets', file, {
        name,
        businessLine: 'bench',
        label: 'click',
        time: 'ts',
        keys: 'impression_id,user_id,item_id,context_id,domain',
      });
    }
    const importMs = Date.now() - t1;

    log(`submitting subtract on ${features.length} features`);
    const t2 = Date.now();
    let e = await api.post<Experiment>('/experiments', {
      kind: 'subtract',
      businessLine: 'bench',
      name: `bench ${o.rows} rows x ${features.length} features`,
      spec: { model: { sampleSet: ss.id, features }, seed: o.seed },
    });
    for (;;) {
      e = await api.get<Experiment>(`/experiments/${e.id}`);
      if (['succeeded', 'failed', 'cancelled'].includes(e.status)) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const wallMs = Date.now() - t2;
    if (e.status !== 'succeeded') throw new CliError(`the bench experiment ${e.id} ${e.status}: ${e.error ?? ''}`);

    const ms = (t: Trial | undefined) => (t?.startedAt && t.finishedAt ? Date.parse(t.finishedAt) - Date.parse(t.startedAt) : 0);
    const trial = (kind: string, role?: string) => e.trials.find((t) => t.kind === kind && (!role || t.metrics?.role === role));
    const base = trial('train', 'base');
    const shuffle = trial('ablate');
    const iv = trial('score');
    const prune = trial('prune');
    const confirm = trial('train', 'pruned');
    const firstStart = Math.min(...e.trials.filter((t) => t.startedAt).map((t) => Date.parse(t.startedAt!)));
    const stages = {
      queueWaitMs: firstStart - Date.parse(e.createdAt),
      sampleBuildMs: (base?.metrics?.timings?.buildMs ?? 0) + (confirm?.metrics?.timings?.buildMs ?? 0),
      trainingMs: base?.metrics?.timings?.trainMs ?? 0,
      scoringMs: (iv?.metrics?.timings?.readMs ?? 0) + (iv?.metrics?.timings?.scoreMs ?? 0),
      ablationMs: (shuffle?.metrics?.timings?.ablateMs ?? 0) + (prune?.metrics?.timings?.ablateMs ?? 0),
      pruneRetrainingMs: prune?.metrics?.timings?.retrainMs ?? 0,
      confirmatoryRetrainMs: (confirm?.metrics?.timings?.trainMs ?? 0) + (confirm?.metrics?.timings?.buildMs ?? 0),
      databaseWritesMs:
        (iv?.metrics?.timings?.writeMs ?? 0) +
        (shuffle?.metrics?.timings?.writeMs ?? 0) +
        (prune?.metrics?.timings?.writeMs ?? 0),
    };
    const experimentMs = Date.parse(e.finishedAt!) - Date.parse(e.createdAt);
    const accounted = Object.values(stages).reduce((a, b) => a + b, 0);
    const slowest = Object.entries(stages).sort((a, b) => b[1] - a[1])[0][0];
    return {
      bench: 'experiment-subtract',
      experimentId: e.id,
      rows: ss.rowCount,
      features: features.length,
      backendRequested: o.backend,
      backendUsed: [...new Set(e.trials.map((t) => t.backend).filter(Boolean))],
      stages,
      otherMs: experimentMs - accounted,
      slowestStage: slowest,
      experimentMs,
      clientWallMs: wallMs,
      setup: { simulateMs, importMs, simulatedRows: worldRows, periods: tiles, ...(s3 ? { uploadToStoreMs: uploadMs } : {}) },
      trials: e.trials.map((t) => ({
        kind: t.kind,
        role: t.metrics?.role ?? null,
        ms: ms(t),
        attempts: t.attempts ?? null,
        ...(t.metrics?.scoredOn ? { scoredOn: t.metrics.scoredOn } : {}),
      })),
      base: base?.metrics
        ? {
            epochs: base.metrics.epochs ?? null,
            steps: base.metrics.steps ?? null,
            trainMs: base.metrics.trainMs ?? null,
            // the fit's forward passes and write, and the sample build's stages (read, join + statistics, encode)
            fit: base.metrics.perSeed?.[0] ?? null,
            build: base.metrics.timings?.build ?? null,
          }
        : null,
      // the prune step's own account: checks by kind, retrained sets and fits, their build and fit time
      prune: prune?.metrics
        ? {
            timings: prune.metrics.timings ?? null,
            // retraining checks fitted ahead of being asked for (the worker's ABACUS_PRUNE_LOOKAHEAD)
            lookahead: prune.metrics.lookahead ?? 0,
            checks: {
              permutation: prune.metrics.curve?.filter((c) => c.check === 'permutation').length ?? 0,
              retrain: prune.metrics.curve?.filter((c) => c.check === 'retrain').length ?? 0,
            },
          }
        : null,
      confirm: confirm?.metrics
        ? {
            timings: confirm.metrics.timings ?? null,
            seeds: confirm.metrics.seeds ?? null,
            // fits found done (the whole model on its first seeds, trained by the prune step with lookahead)
            reusedFits: confirm.metrics.perSeed?.filter((f) => f.cached).length ?? 0,
            // the fits trained here: training, forward passes, write (ms)
            fits: confirm.metrics.perSeed?.filter((f) => !f.cached) ?? [],
          }
        : null,
      result: {
        removable: e.result?.removable?.length ?? null,
        fullAuc: e.result?.full?.auc ?? null,
        confirmedAuc: e.result?.confirmed?.auc ?? null,
      },
      machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(os.totalmem() / 2 ** 30) },
      date: new Date().toISOString(),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
