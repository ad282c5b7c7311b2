import os from 'node:os';
import fs from 'node:fs';
import { z } from 'zod';
import { configSchema, type AppConfig } from './config.schema';

export class ConfigError extends Error {}

let cached: AppConfig | undefined;

/** Parses the environment (and ABACUS_CONFIG_FILE, if set) once; a bad value names the key and the reason. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, options: { fresh?: boolean } = {}): AppConfig {
  if (cached && !options.fresh && env === process.env) return cached;
  let fromFile: Record<string, unknown> = {};
  const file = env.ABACUS_CONFIG_FILE;
  if (file) {
    try {
      fromFile = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new ConfigError(`Invalid configuration: ABACUS_CONFIG_FILE (${file}): ${(err as Error).message}`);
    }
  }
  const raw: Record<string, unknown> = { ...fromFile };
  for (const key of Object.keys(configSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== '') raw[key] = v;
  }
  const unknownFileKeys = Object.keys(fromFile).filter((k) => !(k in configSchema.shape));
  if (unknownFileKeys.length) {
    throw new ConfigError(`Invalid configuration: unknown key(s) in ${file}: ${unknownFileKeys.join(', ')}`);
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(formatConfigIssues(parsed.error));
  if (env === process.env) cached = parsed.data;
  return parsed.data;
}

function formatConfigIssues(error: z.ZodError): string {
  const lines = error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`);
  return `Invalid configuration:\n${lines.join('\n')}`;
}

/**
 * Threads a sample build encodes its ranges on: ABACUS_BUILD_THREADS, or (0) min(8, the cores). On a
 * 16-vCPU GPU host a 1M-row build encoded fastest on 8 (0.78-0.83 s; 4: 1.07-1.23 s; 16: 0.89-1.05 s).
 */
export function buildThreads(config: AppConfig, cores = os.availableParallelism()): number {
  return config.ABACUS_BUILD_THREADS || Math.min(8, cores);
}

/**
 * Threads an IV scoring trial reads and bins its columns on: ABACUS_SCORE_THREADS, or (0) the cores the
 * sample build's threads leave (at least 2, at most 64). A subtract's scoring runs beside its base
 * trial's build: on a 16-core H200 host, 8 scoring threads beside the 8 build threads took a 10M x 100
 * subtract to 89.6 s (build 32.8 s, scoring 32.8 s), where 16 took 121-127 s (build 66-72 s, scoring
 * 59-72 s), and 1M x 40 to 8.6-8.9 s against 10.2-10.7 s (bench/README.md, 2026-11-28 night).
 */
export function scoreThreads(config: AppConfig, cores = os.availableParallelism()): number {
  return config.ABACUS_SCORE_THREADS || Math.min(64, Math.max(2, cores - buildThreads(config, cores)));
}

/** Fits a trial trains at once on the CPU backend: ABACUS_HOST_FITS, or (0) min(4, the cores). */
export function hostFits(config: AppConfig, cores = os.availableParallelism()): number {
  return config.ABACUS_HOST_FITS || Math.max(1, Math.min(4, cores));
}

/**
 * Native threads of a CPU fit that trains beside others of its batch: its share of the trial's threads
 * (ABACUS_RUNTIME_THREADS, or the cores), at least 1. On the 2-core dev machine two one-thread fits at
 * once trained 1.28-1.54x the rows a second of one two-thread fit after another (bench/README.md).
 */
export function hostBatchThreads(config: AppConfig, cores = os.availableParallelism()): number {
  return Math.max(1, Math.floor((config.ABACUS_RUNTIME_THREADS || cores) / hostFits(config, cores)));
}

/**
 * Threads a `score` experiment's trial scores on when no sample build runs beside it: ABACUS_SCORE_THREADS,
 * or (0) every core (at least 2, at most 64).
 */
export function scoreThreadsAlone(config: AppConfig, cores = os.availableParallelism()): number {
  return config.ABACUS_SCORE_THREADS || Math.min(64, Math.max(2, cores));
}

/**
 * Sizes libuv's thread pool for a worker before anything uses it: each model a trial trains (every
 * GPU lane) holds one of its threads for the whole fit, every sample-build and scoring thread waits on
 * it for each chunk DuckDB hands over, and file reads queue behind them. Left alone when
 * UV_THREADPOOL_SIZE is set. Must run before the first asynchronous file or DNS call.
 */
export function sizeWorkerThreadPool(
  config: AppConfig,
  env: NodeJS.ProcessEnv = process.env,
  cores = os.availableParallelism(),
): number {
  const fits = config.ABACUS_WORKER_CONCURRENCY * Math.max(config.ABACUS_GPU_LANES, hostFits(config, cores)) * 2;
  const want = Math.min(1024, Math.max(8, 4 + fits + buildThreads(config, cores) + scoreThreadsAlone(config, cores)));
  if (!env.UV_THREADPOOL_SIZE) env.UV_THREADPOOL_SIZE = String(want);
  return Number(env.UV_THREADPOOL_SIZE);
}
