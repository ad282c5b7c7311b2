import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import { loadConfig, type AppConfig } from '@abacus/configs';
import { ApiKeyService } from '@abacus/access';
import { SYSTEM_SCOPE } from '@abacus/core';
import { createDataSource, dropDatabase, ensureDatabase } from '@abacus/data';

export interface TestEnv {
  config: AppConfig;
  /** env vars for child processes (api, worker, CLI) that point at this run's database and prefix */
  env: Record<string, string>;
  dataDir: string;
  /** secret of an admin key for all lines, created directly in the database (also ABACUS_API_KEY in env) */
  adminKey: string;
  teardown(): Promise<void>;
}

/**
 * A private world per test file: its own Postgres database (migrated), its own BullMQ key prefix and
 * data directory, so runs never see each other's rows or jobs. Removed again by teardown().
 */
export async function createTestEnv(overrides: Record<string, string> = {}): Promise<TestEnv> {
  const base = loadConfig();
  const id = `${process.pid}_${randomBytes(4).toString('hex')}`;
  const dbUrl = new URL(base.ABACUS_DATABASE_URL);
  dbUrl.pathname = `/abacus_test_${id}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-test-'));
  const env: Record<string, string> = {
    ABACUS_DATABASE_URL: dbUrl.toString(),
    ABACUS_REDIS_URL: base.ABACUS_REDIS_URL,
    ABACUS_QUEUE_PREFIX: `abacus-test-${id}`,
    ABACUS_DATA_DIR: dataDir,
    ABACUS_API_PORT: '0',
    ABACUS_JOB_LOCK_MS: '5000',
    ABACUS_SHUTDOWN_GRACE_MS: '2000',
    ABACUS_RUNTIME_THREADS: '2',
    // never the developer's own stored keys
    ABACUS_CREDENTIALS_FILE: path.join(dataDir, 'credentials.json'),
    ...overrides,
  };
  const config = loadConfig(env, { fresh: true });
  await ensureDatabase(config.ABACUS_DATABASE_URL);
  const ds = createDataSource(config);
  await ds.initialize();
  await ds.runMigrations({ transaction: 'each' });
  const { secret: adminKey } = await new ApiKeyService(ds).create(
    { name: 'test-admin', role: 'admin', lines: ['*'] },
    SYSTEM_SCOPE,
  );
  await ds.destroy();
  env.ABACUS_API_KEY = adminKey;
  return {
    config,
    env,
    dataDir,
    adminKey,
    teardown: async () => {
      await dropDatabase(config.ABACUS_DATABASE_URL);
      await deleteQueueKeys(config);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function queueKeys(config: AppConfig): Promise<string[]> {
  const redis = new IORedis(config.ABACUS_REDIS_URL);
  try {
    return await redis.keys(`${config.ABACUS_QUEUE_PREFIX}:*`);
  } finally {
    redis.disconnect();
  }
}

/** Removes every Redis key under the config's queue prefix (a test's own queues, at its end). */
export async function deleteQueueKeys(config: AppConfig): Promise<void> {
  const redis = new IORedis(config.ABACUS_REDIS_URL);
  try {
    const keys = await redis.keys(`${config.ABACUS_QUEUE_PREFIX}:*`);
    if (keys.length) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

/** Polls (every `everyMs`) until fn returns a truthy value or the time runs out. */
export async function waitUntil<T>(
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs: number,
  what: string,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
