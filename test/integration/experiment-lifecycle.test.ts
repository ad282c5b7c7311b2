import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Job, Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { createDataSource, ExperimentEntity, FeatureResultEntity, SampleSetEntity, TrialEntity } from '@abacus/data';
import { JobName, MissingHandlerError, QueueName, WorkerHost, redisConnection } from '@abacus/queue';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker } from '../../apps/worker/src/bootstrap';
import { createTestEnv, waitUntil, type TestEnv } from '../support/test-env';
import { writeSmallCsv } from '../support/fixtures';

let env: TestEnv;
let api: ApiHandle;
let ds: DataSource;
let sampleSetId: string;

async function post(route: string, body: unknown) {
  const res = await fetch(`${api.url}/api/v1${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${env.adminKey}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function experiment(id: string) {
  const res = await fetch(`${api.url}/api/v1/experiments/${id}`, { headers: { authorization: `Bearer ${env.adminKey}` } });
  return (await res.json()) as ExperimentEntity & { trials: TrialEntity[] };
}

const finished = (id: string) => async () => {
  const e = await experiment(id);
  return ['succeeded', 'failed', 'cancelled'].includes(e.status) ? e : null;
};

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
  await post('/business-lines', { name: 'feed' });
  const csv = path.join(env.dataDir, 'in', 'small.csv');
  writeSmallCsv(csv, 4000);
  const form = new FormData();
  for (const [k, v] of Object.entries({ name: 'small', businessLine: 'feed', label: 'click', time: 'ts' })) form.append(k, v);
  form.append('file', await fs.openAsBlob(csv), 'small.csv');
  const res = await fetch(`${api.url}/api/v1/sample-sets`, {
    method: 'POST',
    body: form,
    headers: { authorization: `Bearer ${env.adminKey}` },
  });
  expect(res.status).toBe(201);
  sampleSetId = ((await res.json()) as { id: string }).id;
});

afterAll(async () => {
  await ds?.destroy();
  await api?.close();
  await env?.teardown();
});

describe('experiment lifecycle on BullMQ (real Postgres + Redis)', () => {
  it('refuses to start a worker with a job that has no handler', () => {
    expect(() => new WorkerHost(env.config, { [JobName.FinalizeExperiment]: async () => null })).toThrow(MissingHandlerError);
    expect(() => new WorkerHost(env.config, { [JobName.FinalizeExperiment]: async () => null })).toThrow(/trial\.score/);
  });

  it('runs a score experiment as a flow of trials and stores per-feature results', async () => {
    const worker = await startWorker(env.config, { logger: false });
    try {
      const r = await post('/experiments', {
        kind: 'score',
        businessLine: 'feed',
        spec: { sampleSet: 'small', featuresPerTrial: 2 },
      });
      expect(r.status).toBe(201);
      const id = r.body.id as string;
      expect((r.body.trials as unknown[]).length).toBe(2); // strong, weak, noise, color in trials of 2
      const e = await waitUntil(finished(id), 60_000, 'score experiment');
      expect(e.status).toBe('succeeded');
      expect(e.progress).toBe(1);
      expect(e.trials.every((t) => t.status === 'succeeded' && t.attempts === 1)).toBe(true);
      const results = await ds.getRepository(FeatureResultEntity).findBy({ experimentId: id, scorer: 'iv' });
      const iv = Object.fromEntries(results.map((x) => [x.featureName, x.value]));
      expect(Object.keys(iv).sort()).toEqual(['color', 'noise', 'strong', 'weak']);
      expect(iv.strong).toBeGreaterThan(iv.weak);
      expect(iv.weak).toBeGreaterThan(iv.noise);
      expect(iv.color).toBeGreaterThan(iv.noise);
      const ranking = (e.result as { ranking: { feature: string }[] }).ranking.map((x) => x.feature);
      expect(ranking[0]).toBe('strong');
      expect(await ds.getRepository(FeatureResultEntity).countBy({ experimentId: id, scorer: 'psi' })).toBe(4);
    } finally {
      await worker.stop();
    }
  });

  it('retries a failed trial on the same row without duplicating results', async () => {
    const ss = await ds.getRepository(SampleSetEntity).findOneByOrFail({ id: sampleSetId });
    const file = path.join(env.dataDir, ss.files[0]);
    fs.renameSync(file, `${file}.away`); // the first attempt cannot read the samples
    const r = await post('/experiments', {
      kind: 'score',
      businessLine: 'feed',
      spec: { sampleSet: sampleSetId, featuresPerTrial: 10 },
    });
    const id = r.body.id as string;
    const worker = await startWorker(env.config, { logger: false });
    try {
      await waitUntil(
        async () => (await ds.getRepository(TrialEntity).findOneBy({ experimentId: id, attempts: 1, status: 'queued' })) ?? null,
        30_000,
        'first attempt to fail',
      );
      fs.renameSync(`${file}.away`, file);
      const e = await waitUntil(finished(id), 60_000, 'retried experiment');
      expect(e.status).toBe('succeeded');
      expect(e.trials).toHaveLength(1);
      expect(e.trials[0].attempts).toBe(2);
      expect(await ds.getRepository(FeatureResultEntity).countBy({ experimentId: id, scorer: 'iv' })).toBe(4);
    } finally {
      await worker.stop();
    }
  });

  it('cancels queued trials: their jobs are removed and nothing runs afterwards', async () => {
    const r = await post('/experiments', {
      kind: 'score',
      businessLine: 'feed',
      spec: { sampleSet: 'small', featuresPerTrial: 1 },
    });
    const id = r.body.id as string;
    const trials = r.body.trials as { id: string }[];
    expect(trials).toHaveLength(4);
    const c = await post(`/experiments/${id}/cancel`, {});
    expect(c.status).toBe(200);
    expect(c.body.status).toBe('cancelled');
    const queue = new Queue(QueueName.Trials, {
      connection: redisConnection(env.config),
      prefix: env.config.ABACUS_QUEUE_PREFIX,
    });
    try {
      for (const t of trials) expect(await Job.fromId(queue, t.id)).toBeUndefined();
    } finally {
      await queue.close();
    }
    const again = await post(`/experiments/${id}/cancel`, {});
    expect(again.status).toBe(409);
    const worker = await startWorker(env.config, { logger: false });
    try {
      await new Promise((res) => setTimeout(res, 1500));
      const e = await experiment(id);
      expect(e.status).toBe('cancelled');
      expect(e.trials.every((t) => t.status === 'cancelled' && t.attempts === 0)).toBe(true);
      expect(await ds.getRepository(FeatureResultEntity).countBy({ experimentId: id })).toBe(0);
    } finally {
      await worker.stop();
    }
  });

  it('releases a running job back to the queue at shutdown without spending an attempt', async () => {
    const prefix = `${env.config.ABACUS_QUEUE_PREFIX}-release`;
    const config = { ...env.config, ABACUS_QUEUE_PREFIX: prefix };
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const idle = async () => null;
    const host = new WorkerHost(config, {
      [JobName.FinalizeExperiment]: idle,
      [JobName.TrainTrial]: idle,
      [JobName.AblateTrial]: idle,
      [JobName.PruneTrial]: idle,
      [JobName.CompareTrial]: idle,
      [JobName.ScoreTrial]: (_p, ctx) =>
        new Promise((_, reject) => {
          started();
          ctx.signal.addEventListener('abort', () => reject(new Error('aborted')));
        }),
    });
    const queue = new Queue(QueueName.Trials, { connection: redisConnection(config), prefix });
    try {
      const ids = { experimentId: '00000000-0000-4000-8000-000000000001', trialId: '00000000-0000-4000-8000-000000000002' };
      await queue.add(JobName.ScoreTrial, ids, { jobId: ids.trialId, attempts: 3 });
      host.start();
      await running;
      await host.stop(300);
      const job = await Job.fromId(queue, ids.trialId);
      expect(await job?.getState()).toMatch(/delayed|waiting/);
      expect(job?.attemptsMade).toBe(0);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
