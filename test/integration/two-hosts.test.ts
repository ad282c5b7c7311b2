import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource } from '@abacus/data';
import { S3Store } from '@abacus/store';
import { writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';
import { startLocalS3, type LocalS3 } from '../support/local-s3';
import { freePort, startProcess, waitForApi, type Proc } from '../support/processes';
import { createTestEnv, waitUntil, type TestEnv } from '../support/test-env';

// Several hosts that share only the deployment's store (a local S3 endpoint), one Redis and one
// Postgres: the api and each worker have their own data directory and cache, as on separate
// machines. One experiment's trials are split between two worker "hosts"; one is killed with
// SIGKILL mid-trial and the other takes the trial over; the result is the same as a clean run's;
// built samples are built once and each host fetches them at most once.

const BUCKET = 'abacus-store';
const PREFIX = 'deploy/';
let s3: LocalS3;
let store: S3Store;
let env: TestEnv;
let ds: DataSource;
let api: Proc;
let port: number;
const hosts: { name: string; dir: string; proc: Proc | null }[] = [];
const client = apiClient(
  () => `http://127.0.0.1:${port}`,
  () => env.adminKey,
);

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
const logOf = (p: Proc) => p.output().replace(ANSI, '');
const count = (text: string, needle: string | RegExp) =>
  typeof needle === 'string' ? text.split(needle).length - 1 : (text.match(new RegExp(needle, 'g')) ?? []).length;

/** A worker "host": its own data directory (and so its own cache), the shared store, queue and database. */
function startHost(name: string): Proc {
  let host = hosts.find((h) => h.name === name);
  if (!host) {
    host = { name, dir: fs.mkdtempSync(path.join(os.tmpdir(), `abacus-host-${name}-`)), proc: null };
    hosts.push(host);
  }
  host.proc = startProcess('dist/apps/worker/src/main.js', { ...env.env, ABACUS_DATA_DIR: host.dir });
  return host.proc;
}

const TERMINAL = ['succeeded', 'failed', 'cancelled'];
async function finished(id: string): Promise<Record<string, any>> {
  return waitUntil(
    async () => {
      const r = await client.call('GET', `/experiments/${id}`);
      return TERMINAL.includes(r.body.status as string) ? r.body : null;
    },
    240_000,
    `experiment ${id} to finish`,
  );
}

async function submit(seed: number): Promise<string> {
  const r = await client.call('POST', '/experiments', {
    kind: 'subtract',
    businessLine: 'feed',
    spec: {
      model: {
        sampleSet: 'samples',
        features: ['strong', 'weak', 'noise', 'color'],
        training: { epochs: 6, batchSize: 16, validationFraction: 0, seed },
      },
      seed,
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id as string;
}

/** What an experiment concluded, to compare runs: every score, interval and rank it recorded. */
async function resultsOf(id: string): Promise<unknown[]> {
  return ds.query(
    `SELECT f.feature_name, f.scorer, f.value, f.ci_low, f.ci_high, f.rank, t.kind
       FROM feature_results f JOIN trials t ON t.id = f.trial_id
      WHERE f.experiment_id = $1 ORDER BY t.kind, f.scorer, f.feature_name`,
    [id],
  );
}

beforeAll(async () => {
  s3 = await startLocalS3([BUCKET]);
  store = new S3Store(BUCKET, { endpoint: s3.endpoint, ...s3.credentials });
  port = await freePort();
  env = await createTestEnv({
    ...s3.env,
    ABACUS_STORE_URL: `s3://${BUCKET}/${PREFIX}`,
    ABACUS_API_PORT: String(port),
    ABACUS_RUNTIME_THREADS: '1',
  });
  ds = createDataSource(env.config);
  await ds.initialize();
  api = startProcess('dist/apps/api/src/main.js', env.env);
  await waitForApi(api, `http://127.0.0.1:${port}`);
  expect((await client.call('POST', '/business-lines', { name: 'feed' })).status).toBe(201);
  const csv = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-upload-')), 'samples.csv');
  writeSmallCsv(csv, 20_000);
  const up = await client.upload('/sample-sets', csv, { name: 'samples', businessLine: 'feed', label: 'click', time: 'ts' });
  expect(up.status, JSON.stringify(up.body)).toBe(201);
}, 120_000);

afterAll(async () => {
  if (process.env.ABACUS_TEST_LOGS)
    for (const h of hosts)
      if (h.proc) fs.writeFileSync(path.join(process.env.ABACUS_TEST_LOGS, `host-${h.name}.log`), logOf(h.proc));
  for (const h of hosts) await h.proc?.stop('SIGKILL');
  await api?.stop();
  await ds?.destroy();
  await env?.teardown();
  for (const h of hosts) fs.rmSync(h.dir, { recursive: true, force: true });
  store?.destroy();
  await s3?.stop();
});

describe('two worker hosts sharing only the store, Redis and Postgres', () => {
  it('split one experiment, survive a SIGKILL mid-trial with the same result, and fetch built samples once per host', async () => {
    // the upload went to the store (the api host's data directory is not the workers')
    const uploaded = await store.list(`${PREFIX}sample-sets/`);
    expect(uploaded.map((o) => path.basename(o.key))).toEqual(['data.parquet']);

    const a = startHost('a');
    const b = startHost('b');
    await waitUntil(async () => /worker up/.test(logOf(a)) && /worker up/.test(logOf(b)), 60_000, 'two workers');
    const id = await submit(31);
    const trialId = await waitUntil(
      async () =>
        (
          (await ds.query(`SELECT id FROM trials WHERE experiment_id = $1 AND kind = 'train' AND status = 'running'`, [id])) as {
            id: string;
          }[]
        )[0]?.id,
      90_000,
      'a running train trial',
    );
    const started = `[trial ${trialId} / experiment ${id}] started train (attempt 1)`;
    const victim = await waitUntil(async () => [a, b].find((w) => logOf(w).includes(started)), 10_000, 'the host running it');
    const survivor = victim === a ? b : a;
    const victimLog = () => logOf(victim);
    await victim.stop('SIGKILL');
    const e = await finished(id);
    const log = logOf(survivor);
    expect(e.status, log).toBe('succeeded');
    expect(log).toContain(`[trial ${trialId} / experiment ${id}] started train (attempt 2)`);
    // both hosts ran trials of the experiment
    for (const h of [victimLog(), log])
      expect(count(h, new RegExp(`\\[trial [0-9a-f-]+ / experiment ${id}\\] started`))).toBeGreaterThan(0);
    expect(count(log, `experiment ${id} succeeded`)).toBe(1);
    const dup = await ds.query(
      `SELECT feature_name, scorer FROM feature_results WHERE experiment_id = $1 GROUP BY feature_name, scorer HAVING count(*) > 1`,
      [id],
    );
    expect(dup).toEqual([]);

    // what other hosts need is in the store: built samples (with their manifest) and checkpoints
    const built = (await store.list(`${PREFIX}built/`)).map((o) => o.key);
    const builtKeys = new Set(built.map((k) => k.split('/')[2]));
    expect(builtKeys.size).toBeGreaterThan(0);
    for (const k of builtKeys) expect(built).toContain(`${PREFIX}built/${k}/.abacus-dir.json`);
    expect((await store.list(`${PREFIX}models/`)).some((o) => o.key.endsWith('/.abacus-dir.json'))).toBe(true);
    // each built set was built by one host, and no host fetched one twice
    for (const k of builtKeys) {
      const all = victimLog() + log;
      expect(count(all, `built samples ${k}: built here`), k).toBeLessThanOrEqual(1);
      for (const h of [victimLog(), log]) expect(count(h, `built samples ${k}: fetched`), k).toBeLessThanOrEqual(1);
    }

    // the same experiment again, its checkpoints gone from the store, on a fresh host and on the
    // host that built the samples (restarted): trained anew from the stored built samples, with the
    // same result as the run that lost a worker; the builder's cache still holds them (no fetch)
    await survivor.stop();
    const models = await store.list(`${PREFIX}models/`);
    await store.remove(models.map((o) => o.key));
    const builder = hosts.find((h) => h.proc === survivor)!.name;
    const again1 = startHost(builder);
    const fresh = startHost('c');
    await waitUntil(async () => /worker up/.test(logOf(again1)) && /worker up/.test(logOf(fresh)), 60_000, 'two workers again');
    const again = await submit(31);
    const e2 = await finished(again);
    expect(e2.status, logOf(fresh) + logOf(again1)).toBe('succeeded');
    const logs2 = logOf(fresh) + logOf(again1);
    expect(count(logs2, /built samples [0-9a-f]+: built here/)).toBe(0);
    expect(count(logOf(again1), /built samples [0-9a-f]+: fetched/)).toBe(0);
    for (const k of builtKeys) expect(count(logOf(fresh), `built samples ${k}: fetched`), k).toBeLessThanOrEqual(1);
    expect(count(logs2, /built samples [0-9a-f]+: (fetched|in this host's cache)/)).toBeGreaterThan(0);
    expect(await resultsOf(again)).toEqual(await resultsOf(id));
    expect((await resultsOf(id)).length).toBeGreaterThan(0);
    expect(await fresh.stop()).toBe(0);
    expect(await again1.stop()).toBe(0);
  }, 600_000);
});
