import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import IORedis from 'ioredis';
import { ApiKeyService } from '@abacus/access';
import { loadConfig } from '@abacus/configs';
import { SYSTEM_SCOPE } from '@abacus/core';
import { createDataSource, dropDatabase, ensureDatabase } from '@abacus/data';
import { ApiClient } from '../api-client';
import { CliError } from '../commands/command.types';

export interface Platform {
  api: ApiClient;
  workers: { proc: ChildProcess; out: () => string }[];
  apiProc: { proc: ChildProcess; out: () => string };
  stop(): Promise<void>;
}

const ROOT = path.resolve(__dirname, '../../../../..');
export const TERMINAL = ['succeeded', 'failed', 'cancelled'];

/** The AWS SDK's own settings and credential chain (AWS_ACCESS_KEY_ID, ...), passed on to the children as they are. */
function awsEnv(): Record<string, string> {
  // eslint-disable-next-line no-restricted-syntax -- settings of the SDK, read by the SDK itself in the children
  const env = process.env;
  return Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[0].startsWith('AWS_')),
  );
}

function start(entry: string, env: Record<string, string>): { proc: ChildProcess; out: () => string } {
  const proc = spawn(process.execPath, [path.join(ROOT, entry)], {
    cwd: ROOT,
    // only what the bench sets: a private platform must not pick up the caller's ABACUS_* settings
    env: { ...env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d) => (out += String(d)));
  proc.stderr?.on('data', (d) => (out += String(d)));
  return { proc, out: () => out };
}

async function stopProc(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const t = setTimeout(() => p.kill('SIGKILL'), 15_000);
    p.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    p.kill('SIGTERM');
  });
}

export async function until<T>(fn: () => Promise<T | null | undefined | false>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new CliError(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * `fn` against a private platform started for it (and stopped afterwards, whatever happens) when
 * `private` options are given, else against the running api.
 */
export async function onPlatform<T>(
  o: { workers: number; name: string; env?: Record<string, string> } | null,
  running: () => ApiClient,
  log: (s: string) => void,
  fn: (api: ApiClient) => Promise<T>,
): Promise<T> {
  if (!o) return fn(running());
  const platform = await startPlatform(o, log);
  // interrupted (Ctrl-C, a timeout's TERM): the platform's processes, database and queue go with it
  const onSignal = (sig: NodeJS.Signals) => {
    log(`${sig}: stopping the private platform`);
    void platform.stop().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await fn(platform.api);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await platform.stop();
  }
}

/** A bench's JSON, also written to `file` (its directory made) when one is named. */
export function writeJsonOut(file: string | undefined, doc: unknown): void {
  if (!file) return;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
}

/** A private platform: its own database, queue prefix and data dir; api + N workers from dist/. */
export async function startPlatform(
  o: { workers: number; name: string; env?: Record<string, string> },
  log: (s: string) => void,
): Promise<Platform> {
  const base = loadConfig();
  const id = `${Date.now()}_${randomBytes(3).toString('hex')}`;
  const db = new URL(base.ABACUS_DATABASE_URL);
  db.pathname = `/abacus_${o.name}_${id}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `abacus-${o.name}-`));
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const env: Record<string, string> = {
    ABACUS_DATABASE_URL: db.toString(),
    ABACUS_REDIS_URL: base.ABACUS_REDIS_URL,
    ABACUS_QUEUE_PREFIX: `abacus-${o.name}-${id}`,
    ABACUS_DATA_DIR: dataDir,
    ABACUS_API_HOST: '127.0.0.1',
    ABACUS_API_PORT: String(port),
    ABACUS_WORKER_CONCURRENCY: '1',
    ABACUS_RUNTIME_THREADS: '1',
    // the bench measures the API, not the per-key limiter
    ABACUS_RATE_LIMIT_PER_MIN: '1000000',
    // the stores this process is configured for (sets by reference, the deployment's store)
    ...Object.fromEntries(
      (
        [
          ['ABACUS_S3_ENDPOINT', base.ABACUS_S3_ENDPOINT],
          ['ABACUS_S3_REGION', base.ABACUS_S3_REGION],
          ['ABACUS_S3_FORCE_PATH_STYLE', base.ABACUS_S3_FORCE_PATH_STYLE],
          ['ABACUS_STORES_FILE', base.ABACUS_STORES_FILE],
          ['ABACUS_STORE_URL', base.ABACUS_STORE_URL],
        ] as const
      )
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, String(v)]),
    ),
    ...awsEnv(),
    ...o.env,
  };
  const config = loadConfig(env, { fresh: true });
  log(`database ${db.pathname.slice(1)}, queue prefix ${env.ABACUS_QUEUE_PREFIX}`);
  await ensureDatabase(config.ABACUS_DATABASE_URL);
  const ds = createDataSource(config);
  await ds.initialize();
  await ds.runMigrations({ transaction: 'each' });
  const { secret } = await new ApiKeyService(ds).create({ name: `${o.name}-bench`, role: 'admin', lines: ['*'] }, SYSTEM_SCOPE);
  await ds.destroy();
  const apiProc = start('dist/apps/api/src/main.js', env);
  const workers = Array.from({ length: o.workers }, () => start('dist/apps/worker/src/main.js', env));
  const api = new ApiClient(`http://127.0.0.1:${port}`, { authorization: `Bearer ${secret}` });
  await until(() => api.get<{ status: string }>('/health').then((h) => h.status === 'ok'), 60_000, 'the api');
  await until(async () => workers.every((w) => w.out().includes('listening on queues')), 60_000, 'the workers');
  return {
    api,
    workers,
    apiProc,
    stop: async () => {
      await Promise.all([...workers.map((w) => stopProc(w.proc)), stopProc(apiProc.proc)]);
      await dropDatabase(config.ABACUS_DATABASE_URL).catch(() => undefined);
      const redis = new IORedis(config.ABACUS_REDIS_URL);
      const keys = await redis.keys(`${config.ABACUS_QUEUE_PREFIX}:*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
