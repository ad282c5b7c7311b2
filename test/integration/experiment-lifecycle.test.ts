import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Job, Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { createDataSource, ExperimentEntity, FeatureResultEntity, SampleSetEntity, TrialEntity } from '@abacus/data';
import { DataDir } from '@abacus/catalog';
import { JobName, MissingHandlerError, QueueName, WorkerHost, redisConnection } from '@abacus/queue';
import {
  BuiltSamplesCache,
  DevicePool,
  FinalizeExperimentHandler,
  ModelTrainer,
  PLANNERS,
  ScoreTrialHandler,
  TrainTrialHandler,
  TrialLedger,
  WebhookNotifier,
  type WorkflowContext,
} from '@abacus/workflows';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker } from '../../apps/worker/src/bootstrap';
import { createTestEnv, deleteQueueKeys, queueKeys, waitUntil, type TestEnv } from '../support/test-env';
import { writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';
import { startProcess } from '../support/processes';

/** hosts built here handle trials only: no workers on the cost-measurement and fit-check queues they do not use */
const NO_COST_QUEUES = [QueueName.Costs, QueueName.CostsGpu, QueueName.Fits, QueueName.FitsGpu];

let env: TestEnv;
let api: ApiHandle;
let ds: DataSource;
let sampleSetId: string;
const client = apiClient(
  () => api.url,
  () => env.adminKey,
);

/** A data directory whose first reads of sample files fail with a lost connection. */
class FlakyDataDir extends DataDir {
  constructor(
    root: string,
    public failuresLeft: number,
  ) {
    super(root);
  }

  override abs(relative: string): string {
    if (relative.startsWith('sample-sets') && this.failuresLeft > 0) {
      this.failuresLeft--;
      throw Object.assign(new Error(`read ECONNRESET while opening ${relative}`), { code: 'ECONNRESET' });
    }
    return super.abs(relative);
  }
}

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
      // a score experiment's scoring has the worker to itself: the thread count for scoring alone
      expect(e.trials.map((t) => t.metrics?.threadsFor)).toEqual(['alone', 'alone']);
      // a CPU worker's scoring does not wait for sample builds (that is for GPU workers)
      expect(e.trials.map((t) => [t.metrics?.waitsForBuilds, (t.metrics?.timings as { buildWaitMs?: number } | undefined)?.buildWaitMs])).toEqual([
        [false, 0],
        [false, 0],
      ]);
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

  it('trains a subtract base model whose first epoch reads in order on its samples as they are built; a bad value is a 400 at its path', async () => {
    const bad = await post('/experiments', {
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { sampleSet: 'small', training: { firstEpoch: 'sorted' } }, retrainSeeds: 0, confirm: false },
    });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('spec.model.training.firstEpoch');
    // a registered model brings its own training: a spec's training beside it would be ignored, so it is refused
    const registered = await post('/experiments', {
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { model: 'any-model', training: { firstEpoch: 'inOrder' } }, retrainSeeds: 0, confirm: false },
    });
    expect(registered.status).toBe(400);
    expect(JSON.stringify(registered.body)).toContain('spec.model.training');
    expect(JSON.stringify(registered.body)).toContain('training comes from the registered model');
    const worker = await startWorker(env.config, { logger: false });
    try {
      const r = await post('/experiments', {
        kind: 'subtract',
        businessLine: 'feed',
        spec: { model: { sampleSet: 'small', training: { epochs: 3, firstEpoch: 'inOrder' } }, retrainSeeds: 0, confirm: false },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      const e = await waitUntil(finished(r.body.id as string), 120_000, 'in-order subtract');
      expect(e.status, JSON.stringify(e.trials.map((t) => t.error))).toBe('succeeded');
      const base = e.trials.find((t) => t.kind === 'train')!;
      const m = base.metrics as { samplesCached: boolean; streamedBuild?: { firstChunkMs: number; buildEndMs: number }; epochs: number };
      // built here, and the fit's first chunk began before the build had ended
      expect(m.samplesCached).toBe(false);
      expect(m.streamedBuild).toBeDefined();
      expect(m.streamedBuild!.firstChunkMs).toBeLessThanOrEqual(m.streamedBuild!.buildEndMs);
      expect(m.epochs).toBeGreaterThanOrEqual(2);
    } finally {
      await worker.stop();
    }
  }, 180_000);

  it('retries a trial after a transient error on the same row without duplicating results', async () => {
    const r = await post('/experiments', {
      kind: 'score',
      businessLine: 'feed',
      spec: { sampleSet: sampleSetId, featuresPerTrial: 10 },
    });
    const id = r.body.id as string;
    const ledger = new TrialLedger(ds);
    // the first read of the samples loses its connection, as a shared filesystem might
    const flaky = new FlakyDataDir(env.dataDir, 1);
    // and a scoring larger than buildWaitCells (here any) does not wait for builds
    const score = new ScoreTrialHandler(ds, ledger, flaky, { threads: 1, buildWaitCells: 1 });
    const finalize = new FinalizeExperimentHandler(ds, PLANNERS);
    const unused = async () => {
      throw new Error('not part of this test');
    };
    const host = new WorkerHost(
      env.config,
      {
        [JobName.FinalizeExperiment]: (p) => finalize.handle(p),
        [JobName.ScoreTrial]: (p, ctx) => score.handle(p, ctx),
        [JobName.TrainTrial]: unused,
        [JobName.AblateTrial]: unused,
        [JobName.PruneTrial]: unused,
        [JobName.CompareTrial]: unused,
        [JobName.DiscoverTrial]: unused,
        [JobName.MultiplyTrial]: unused,
        [JobName.MultiplyCompareTrial]: unused,
        [JobName.DivideSelectTrial]: unused,
        [JobName.DivideTierTrial]: unused,
        [JobName.DividePublishTrial]: unused,
        [JobName.ServingWebhook]: unused,
        [JobName.ReportFire]: unused,
        [JobName.ReportRun]: unused,
        [JobName.ReportDeliver]: unused,
      },
      NO_COST_QUEUES,
    );
    host.start();
    try {
      const e = await waitUntil(finished(id), 60_000, 'retried experiment');
      expect(flaky.failuresLeft).toBe(0);
      expect(e.status).toBe('succeeded');
      expect(e.trials).toHaveLength(1);
      expect(e.trials[0].attempts).toBe(2);
      expect(e.trials[0].metrics?.waitsForBuilds).toBe(false);
      expect(await ds.getRepository(FeatureResultEntity).countBy({ experimentId: id, scorer: 'iv' })).toBe(4);
    } finally {
      await host.stop();
    }
  });

  it('fails a trial whose samples disappeared after one attempt, stores message and stack, and runs the others', async () => {
    const csv = path.join(env.dataDir, 'in', 'doomed.csv');
    writeSmallCsv(csv, 1000);
    const up = await client.upload('/sample-sets', csv, { name: 'doomed', businessLine: 'feed', label: 'click', time: 'ts' });
    expect(up.status).toBe(201);
    const doomed = await ds.getRepository(SampleSetEntity).findOneByOrFail({ id: up.body.id as string });
    const bad = await client.call('POST', '/experiments', {
      kind: 'score',
      businessLine: 'feed',
      spec: { sampleSet: 'doomed', featuresPerTrial: 10 },
    });
    const good = await client.call('POST', '/experiments', {
      kind: 'score',
      businessLine: 'feed',
      spec: { sampleSet: 'small', featuresPerTrial: 2 },
    });
    expect([bad.status, good.status]).toEqual([201, 201]);
    for (const f of doomed.files) fs.rmSync(path.join(env.dataDir, f));
    const worker = startProcess('dist/apps/worker/src/main.js', { ...env.env, ABACUS_TRIAL_ATTEMPTS: '3' });
    try {
      const badId = bad.body.id as string;
      const failed = await waitUntil(finished(badId), 60_000, 'the experiment without samples');
      const ok = await waitUntil(finished(good.body.id as string), 60_000, 'the experiment queued alongside');
      expect(ok.status, worker.output()).toBe('succeeded');
      expect(failed.status).toBe('failed');
      expect(failed.error).toMatch(/file does not exist/);
      const [trial] = failed.trials;
      expect(trial).toMatchObject({ status: 'failed', attempts: 1 });
      expect(trial.error).toMatch(/cannot read table .*: file does not exist/);
      // the stack is for operators: in the database and the worker log, not in the API's answer
      expect(Object.keys(trial)).not.toContain('errorStack');
      const [row]: { error_stack: string }[] = await ds.query('SELECT error_stack FROM trials WHERE id = $1', [trial.id]);
      expect(row.error_stack).toMatch(/^TableReadError: cannot read table/);
      expect(row.error_stack).toMatch(/\n\s+at /);
      const queue = new Queue(QueueName.Trials, {
        connection: redisConnection(env.config),
        prefix: env.config.ABACUS_QUEUE_PREFIX,
      });
      try {
        const job = await Job.fromId(queue, trial.id);
        expect(await job?.getState()).toBe('failed');
        expect(job?.attemptsMade).toBe(1);
      } finally {
        await queue.close();
      }
      const log = worker.output();
      expect(log).toContain(`trial ${trial.id} / experiment ${badId}`);
      expect(log).toMatch(/failed: cannot read table .* \[deterministic error/);
      expect(log).toMatch(/TableReadError: cannot read table[^\n]*\n\s+at /);
    } finally {
      expect(await worker.stop()).toBe(0);
    }
  });

  it('fails a trial whose training diverges (NaN loss) once, with a clear stored error, and runs the others', async () => {
    // the runtime itself diverges: a learning rate no spec may ask for (the API caps it at 1) turns the
    // loss into NaN within a few steps
    class DivergingTrainer extends ModelTrainer {
      override spec(...args: Parameters<ModelTrainer['spec']>) {
        const s = super.spec(...args);

        return { ...s, optimizer: { dense: { kind: 'adam' as const, lr: 1e38 }, sparse: { kind: 'adam' as const, lr: 1e38 } } };
      }
    }
    const dataDir = new DataDir(env.dataDir);
    const ledger = new TrialLedger(ds);
    const w: WorkflowContext = {
      ds,
      ledger,
      dataDir,
      samples: new BuiltSamplesCache(dataDir),
      trainer: new DivergingTrainer(dataDir, { backend: 'cpu', threads: 1 }),
      notifier: new WebhookNotifier(undefined, undefined, { allow: env.config.ABACUS_WEBHOOK_ALLOWED_HOSTS }),
      devices: new DevicePool(0),
    };
    const train = new TrainTrialHandler(w);
    const score = new ScoreTrialHandler(ds, ledger, dataDir);
    const finalize = new FinalizeExperimentHandler(ds, PLANNERS);
    const notRun = async () => {
      throw new Error('not part of this test');
    };
    const diverging = await client.call('POST', '/experiments', {
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { sampleSet: 'small', training: { epochs: 2, batchSize: 64 } }, retrainSeeds: 0, confirm: false },
    });
    const other = await client.call('POST', '/experiments', {
      kind: 'score',
      businessLine: 'feed',
      spec: { sampleSet: 'small', featuresPerTrial: 2 },
    });
    expect([diverging.status, other.status], JSON.stringify(diverging.body)).toEqual([201, 201]);
    const host = new WorkerHost(
      env.config,
      {
        [JobName.FinalizeExperiment]: (p) => finalize.handle(p),
        [JobName.ScoreTrial]: (p, ctx) => score.handle(p, ctx),
        [JobName.TrainTrial]: (p, ctx) => train.handle(p, ctx),
        // never reached: they depend on the model that diverged and fail as "not run"
        [JobName.AblateTrial]: notRun,
        [JobName.PruneTrial]: notRun,
        [JobName.CompareTrial]: notRun,
        [JobName.DiscoverTrial]: notRun,
        [JobName.MultiplyTrial]: notRun,
        [JobName.MultiplyCompareTrial]: notRun,
        [JobName.DivideSelectTrial]: notRun,
        [JobName.DivideTierTrial]: notRun,
        [JobName.DividePublishTrial]: notRun,
        [JobName.ServingWebhook]: notRun,
        [JobName.ReportFire]: notRun,
        [JobName.ReportRun]: notRun,
        [JobName.ReportDeliver]: notRun,
      },
      NO_COST_QUEUES,
    );
    host.start();
    try {
      const failed = await waitUntil(finished(diverging.body.id as string), 60_000, 'the diverging experiment');
      const ok = await waitUntil(finished(other.body.id as string), 60_000, 'the experiment alongside');
      expect(ok.status).toBe('succeeded');
      expect(failed.status).toBe('failed');
      const trainTrial = failed.trials.find((t) => t.kind === 'train' && t.seq === 0)!;
      expect(trainTrial, JSON.stringify(failed.trials.map((t) => [t.seq, t.kind, t.status, t.attempts, t.error]))).toMatchObject({
        status: 'failed',
        attempts: 1,
      });
      expect(trainTrial.error).toMatch(/^training diverged: final loss is NaN/);
      const [row]: { error_stack: string }[] = await ds.query('SELECT error_stack FROM trials WHERE id = $1', [trainTrial.id]);
      expect(row.error_stack).toMatch(/^TrainingDivergedError: training diverged/);
      expect(row.error_stack).toMatch(/\n\s+at /);
      expect(failed.error).toMatch(/training diverged/);
    } finally {
      await host.stop();
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
    const host = new WorkerHost(
      config,
      {
        [JobName.FinalizeExperiment]: idle,
        [JobName.TrainTrial]: idle,
        [JobName.AblateTrial]: idle,
        [JobName.PruneTrial]: idle,
        [JobName.CompareTrial]: idle,
        [JobName.DiscoverTrial]: idle,
        [JobName.MultiplyTrial]: idle,
        [JobName.MultiplyCompareTrial]: idle,
        [JobName.DivideSelectTrial]: idle,
        [JobName.DivideTierTrial]: idle,
        [JobName.DividePublishTrial]: idle,
        [JobName.ServingWebhook]: idle,
        [JobName.ReportFire]: idle,
        [JobName.ReportRun]: idle,
        [JobName.ReportDeliver]: idle,
        [JobName.ScoreTrial]: (_p, ctx) =>
          new Promise((_, reject) => {
            started();
            ctx.signal.addEventListener('abort', () => reject(new Error('aborted')));
          }),
      },
      NO_COST_QUEUES,
    );
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
      // the worker host's other queues under this prefix (outside the file's own, which its
      // teardown removes) leave nothing behind either
      await deleteQueueKeys(config);
    }
    expect(await queueKeys(config)).toEqual([]);
  });
});
