import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource } from '@abacus/data';
import { writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';
import { startPrivatePostgres, startPrivateRedis, type PrivateService } from '../support/private-services';
import { freePort, startProcess, type Proc } from '../support/processes';
import { createTestEnv, waitUntil, type TestEnv } from '../support/test-env';

let redis: PrivateService;
let pg: PrivateService;
let env: TestEnv;
let ds: DataSource;
let api: Proc;
let worker: Proc;
let baseUrl: string;
const client = apiClient(
  () => baseUrl,
  () => env.adminKey,
);

const TERMINAL = ['succeeded', 'failed', 'cancelled'];

async function healthy(): Promise<boolean> {
  const r = await client.call('GET', '/health').catch(() => null);
  return r?.status === 200 && r.body.status === 'ok';
}

/** Experiment rows read through a fresh query each time: the pool reconnects after a Postgres restart. */
async function statuses(ids: string[]): Promise<{ id: string; status: string; error: string | null }[]> {
  return ds.query('SELECT id, status, error FROM experiments WHERE id = ANY($1)', [ids]);
}

beforeAll(async () => {
  redis = await startPrivateRedis();
  pg = await startPrivatePostgres();
  const port = await freePort();
  env = await createTestEnv({
    ABACUS_DATABASE_URL: `${pg.url}/abacus_restarts`,
    ABACUS_REDIS_URL: redis.url,
    ABACUS_API_PORT: String(port),
    ABACUS_REAPER_INTERVAL_MS: '1000',
    ABACUS_REAPER_MIN_AGE_MS: '2000',
  });
  baseUrl = `http://127.0.0.1:${port}`;
  ds = createDataSource(env.config);
  await ds.initialize();
  api = startProcess('dist/apps/api/src/main.js', env.env);
  worker = startProcess('dist/apps/worker/src/main.js', env.env);
  await waitUntil(
    async () => {
      if (api.child.exitCode !== null) throw new Error(`api exited:\n${api.output()}`);
      return healthy();
    },
    60_000,
    'api health',
  );
  expect((await client.call('POST', '/business-lines', { name: 'feed' })).status).toBe(201);
  const csv = path.join(env.dataDir, 'in', 'samples.csv');
  writeSmallCsv(csv, 60_000);
  const up = await client.upload('/sample-sets', csv, { name: 'samples', businessLine: 'feed', label: 'click', time: 'ts' });
  expect(up.status).toBe(201);
});

afterAll(async () => {
  await worker?.stop();
  await api?.stop();
  await ds?.destroy();
  await env?.teardown();
  await redis?.stop();
  await pg?.stop();
});

describe('Redis and Postgres restarts (private servers)', () => {
  it('api and worker reconnect, nothing queued is lost, every experiment finishes once', async () => {
    const submit = async () => {
      const r = await client.call('POST', '/experiments', {
        kind: 'score',
        businessLine: 'feed',
        spec: { sampleSet: 'samples', featuresPerTrial: 1 },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.id as string;
    };
    const ids = [await submit(), await submit(), await submit()];
    const running = async (among: string[]) =>
      (await ds.query(`SELECT 1 FROM trials WHERE experiment_id = ANY($1) AND status = 'running'`, [among])).length > 0;
    const queuedTrials = async () =>
      Number(
        (await ds.query(`SELECT count(*)::int AS n FROM trials WHERE experiment_id = ANY($1) AND status = 'queued'`, [ids]))[0].n,
      );
    await waitUntil(() => running(ids), 30_000, 'a running trial before the Redis restart');

    // Redis comes back empty (no persistence): the reaper rebuilds the lost flows from Postgres
    expect(await queuedTrials()).toBeGreaterThan(0);
    await redis.restart();
    await waitUntil(healthy, 30_000, 'api health after the Redis restart');
    ids.push(await submit(), await submit());
    await waitUntil(() => running(ids), 30_000, 'a running trial before the Postgres restart');

    expect(await queuedTrials()).toBeGreaterThan(0);
    await pg.restart();
    await waitUntil(healthy, 30_000, 'api health after the Postgres restart');
    ids.push(await submit());

    const done = await waitUntil(
      async () => {
        const rows = await statuses(ids).catch(() => []);
        return rows.length === ids.length && rows.every((r) => TERMINAL.includes(r.status)) ? rows : null;
      },
      150_000,
      'every experiment to finish',
    );
    expect(
      done.filter((e) => e.status !== 'succeeded'),
      worker.output(),
    ).toEqual([]);
    // the worker logs a finalize right after writing it: the line may reach the pipe a moment after the
    // status shows
    await waitUntil(
      async () => ids.every((id) => worker.output().includes(`experiment ${id} succeeded`)) || null,
      15_000,
      'the worker to log every finalize',
    );
    const log = worker.output();
    expect(log).toMatch(/reaper: flow rebuilt/);
    for (const id of ids) {
      // finalize wrote each experiment's result exactly once
      expect(log.split(`experiment ${id} succeeded`).length - 1, id).toBe(1);
    }
    const results: { experiment_id: string; n: number; distinct: number }[] = await ds.query(
      `SELECT experiment_id, count(*)::int AS n, count(DISTINCT feature_name)::int AS distinct
         FROM feature_results WHERE experiment_id = ANY($1) AND scorer = 'iv' GROUP BY experiment_id`,
      [ids],
    );
    expect(results).toHaveLength(ids.length);
    for (const r of results) expect(r).toMatchObject({ n: 4, distinct: 4 });
    const attempts: { attempts: number; status: string }[] = await ds.query(
      'SELECT attempts, status FROM trials WHERE experiment_id = ANY($1)',
      [ids],
    );
    expect(attempts).toHaveLength(ids.length * 4);
    for (const t of attempts) {
      expect(t.status).toBe('succeeded');
      expect(t.attempts).toBeGreaterThanOrEqual(1);
      expect(t.attempts).toBeLessThanOrEqual(env.config.ABACUS_TRIAL_ATTEMPTS);
    }
    expect(api.child.exitCode).toBeNull();
    expect(worker.child.exitCode, log).toBeNull();
  });
});
