import { createHash, randomUUID } from 'node:crypto';
import { FlowProducer, Job, Queue, QueueEvents, type ConnectionOptions, type FlowJob } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import type { AppConfig } from '@abacus/configs';
import {
  JOB_QUEUE,
  JobName,
  QueueName,
  type CostMeasureJob,
  type FitCheckJob,
  type JobPayloads,
  type TrialJobName,
} from './queue-names';

export interface PlannedTrialJob {
  trialId: string;
  job: TrialJobName;
  /** index of the trial that must wait for this one; undefined = the experiment's finalize job */
  parent?: number;
}

/** No worker finished a request-scoped job (a cost measurement) in time; nothing of it stays queued. */
export class JobTimeoutError extends Error {}

export const reportSchedulerId = (scheduleId: string) => `report-schedule:${scheduleId}`;

/** A retraining check's job id: the prune trial, the set (in any order) and the seed. */
export function fitCheckJobId(c: Pick<FitCheckJob, 'trialId' | 'set' | 'seed'>): string {
  const of = createHash('sha256')
    .update(JSON.stringify({ set: [...c.set].sort(), seed: c.seed }))
    .digest('hex')
    .slice(0, 24);
  return `fit-${c.trialId}-${of}`;
}

export function redisConnection(config: Pick<AppConfig, 'ABACUS_REDIS_URL'>): ConnectionOptions {
  const u = new URL(config.ABACUS_REDIS_URL);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    username: u.username || undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db: u.pathname.length > 1 ? Number(u.pathname.slice(1)) : undefined,
    // BullMQ workers block on Redis; retry forever rather than fail a blocking call
    maxRetriesPerRequest: null,
  };
}

/** Producer side of BullMQ: enqueues experiment flows, cancels them, reports queue health. */
export class QueueService {
  private readonly queues = new Map<QueueName, Queue>();
  private readonly flows: FlowProducer;

  constructor(private readonly config: AppConfig) {
    const connection = redisConnection(config);
    this.flows = new FlowProducer({ connection, prefix: config.ABACUS_QUEUE_PREFIX });
  }

  /** A queue's producer, connected on first use (a process that never measures costs opens no cost queues). */
  queue(name: QueueName): Queue {
    if (!(Object.values(QueueName) as string[]).includes(name)) throw new Error(`unknown queue ${name}`);
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: redisConnection(this.config), prefix: this.config.ABACUS_QUEUE_PREFIX });
      this.queues.set(name, q);
    }
    return q;
  }

  /**
   * One flow per experiment: the finalize job (id = experiment id) is the root; trials hang below it
   * as a tree (a trial runs after the trials that name it as parent; job id = trial id, so a retry
   * updates the same row). A trial that fails for good does not block its parent: the parent sees
   * the failed dependency and fails fast, and finalize marks the experiment failed.
   */
  async enqueueExperiment(experimentId: string, trials: PlannedTrialJob[]): Promise<void> {
    const trialOpts = {
      attempts: this.config.ABACUS_TRIAL_ATTEMPTS,
      backoff: { type: 'exponential', delay: 2000 },
      ignoreDependencyOnFailure: true,
      removeOnComplete: { age: 7 * 24 * 3600 },
      removeOnFail: { age: 30 * 24 * 3600 },
    };
    trials.forEach((t, i) => {
      if (t.parent !== undefined && (t.parent < 0 || t.parent >= trials.length || t.parent === i)) {
        throw new Error(`trial ${i}: parent ${t.parent} is not another trial of the plan`);
      }
    });
    const node = (i: number, seen: Set<number>): FlowJob => {
      if (seen.has(i)) throw new Error(`trial ${i}: the plan's dependencies form a cycle`);
      const t = trials[i];
      const data: JobPayloads[JobName.ScoreTrial] = { experimentId, trialId: t.trialId };
      return {
        name: t.job,
        queueName: JOB_QUEUE[t.job],
        data,
        opts: { jobId: t.trialId, ...trialOpts },
        children: trials.flatMap((c, j) => (c.parent === i ? [node(j, new Set([...seen, i]))] : [])),
      };
    };
    await this.flows.add({
      name: JobName.FinalizeExperiment,
      queueName: JOB_QUEUE[JobName.FinalizeExperiment],
      data: { experimentId } satisfies JobPayloads[JobName.FinalizeExperiment],
      opts: {
        jobId: experimentId,
        attempts: this.config.ABACUS_TRIAL_ATTEMPTS,
        backoff: { type: 'exponential', delay: 1000 },
        removeOnComplete: { age: 7 * 24 * 3600 },
        removeOnFail: { age: 30 * 24 * 3600 },
      },
      children: trials.flatMap((t, i) => (t.parent === undefined ? [node(i, new Set())] : [])),
    });
  }

  /**
   * One webhook delivery (job id = delivery id, so enqueueing it twice is harmless); each attempt is
   * one POST, retried with exponential backoff up to ABACUS_SERVING_WEBHOOK_ATTEMPTS.
   */
  async enqueueWebhook(deliveryId: string): Promise<void> {
    await this.queue(QueueName.Webhooks).add(
      JobName.ServingWebhook,
      { deliveryId } satisfies JobPayloads[JobName.ServingWebhook],
      {
        jobId: deliveryId,
        attempts: this.config.ABACUS_SERVING_WEBHOOK_ATTEMPTS,
        backoff: { type: 'exponential', delay: this.config.ABACUS_SERVING_WEBHOOK_BACKOFF_MS },
        removeOnComplete: { age: 7 * 24 * 3600 },
        removeOnFail: { age: 30 * 24 * 3600 },
      },
    );
  }

  /** One report run (job id = report id: a report is run by one job at a time, and queueing it again is harmless). */
  async enqueueReportRun(reportId: string): Promise<void> {
    await this.queue(QueueName.Reports).add(JobName.ReportRun, { reportId } satisfies JobPayloads[JobName.ReportRun], {
      jobId: reportId,
      attempts: this.config.ABACUS_TRIAL_ATTEMPTS,
      backoff: { type: 'exponential', delay: 2000 },
      removeOnComplete: { age: 7 * 24 * 3600 },
      removeOnFail: { age: 30 * 24 * 3600 },
    });
  }

  /** One report delivery (job id = delivery id); each attempt is one POST or one e-mail, retried with backoff. */
  async enqueueReportDelivery(deliveryId: string): Promise<void> {
    await this.queue(QueueName.Reports).add(JobName.ReportDeliver, { deliveryId } satisfies JobPayloads[JobName.ReportDeliver], {
      jobId: deliveryId,
      attempts: this.config.ABACUS_SERVING_WEBHOOK_ATTEMPTS,
      backoff: { type: 'exponential', delay: this.config.ABACUS_SERVING_WEBHOOK_BACKOFF_MS },
      removeOnComplete: { age: 7 * 24 * 3600 },
      removeOnFail: { age: 30 * 24 * 3600 },
    });
  }

  /**
   * The BullMQ job scheduler of a report schedule: one `report.fire` job per cron tick, kept in Redis
   * (it outlives worker restarts) and handed to exactly one worker per tick.
   */
  async upsertReportScheduler(scheduleId: string, cron: string, tz: string): Promise<void> {
    await this.queue(QueueName.Reports).upsertJobScheduler(
      reportSchedulerId(scheduleId),
      { pattern: cron, tz },
      {
        name: JobName.ReportFire,
        data: { scheduleId } satisfies JobPayloads[JobName.ReportFire],
        opts: {
          attempts: this.config.ABACUS_TRIAL_ATTEMPTS,
          backoff: { type: 'exponential', delay: 1000 },
          removeOnComplete: { age: 30 * 24 * 3600 },
          removeOnFail: { age: 30 * 24 * 3600 },
        },
      },
    );
  }

  async removeReportScheduler(scheduleId: string): Promise<void> {
    await this.queue(QueueName.Reports).removeJobScheduler(reportSchedulerId(scheduleId));
  }

  /** The scheduler's next fire time (ms), or null when Redis holds no scheduler for it. */
  async reportSchedulerNext(scheduleId: string): Promise<number | null> {
    const s = await this.queue(QueueName.Reports).getJobScheduler(reportSchedulerId(scheduleId));
    return s ? (s.next ?? null) : null;
  }

  /** Removes the trial jobs that have not started; running ones stop themselves when they see the cancel. */
  async removePendingTrials(trialIds: string[]): Promise<number> {
    let removed = 0;
    const trials = this.queue(QueueName.Trials);
    for (const id of trialIds) {
      const job = await Job.fromId(trials, id);
      if (!job) continue;
      const state = await job.getState();
      if (state === 'waiting' || state === 'delayed' || state === 'prioritized' || state === 'waiting-children') {
        try {
          await job.remove();
          removed++;
        } catch {
          // it started in between: the running trial sees the cancel flag instead
        }
      }
    }
    return removed;
  }

  async jobState(queue: QueueName, jobId: string): Promise<string | null> {
    const job = await Job.fromId(this.queue(queue), jobId);
    return job ? job.getState() : null;
  }

  /**
   * Removes what is left of an experiment's flow (finalize with its children, and the named trial
   * jobs), so the reaper can enqueue a fresh one. Throws if one of them is running (locked).
   */
  async removeExperimentJobs(experimentId: string, trialIds: string[]): Promise<void> {
    const finalize = await Job.fromId(this.queue(QueueName.Experiments), experimentId);
    if (finalize) await finalize.remove({ removeChildren: true });
    const trials = this.queue(QueueName.Trials);
    for (const id of trialIds) {
      const job = await Job.fromId(trials, id);
      if (job) await job.remove({ removeChildren: true });
    }
  }

  /**
   * Workers listening on a queue now (BullMQ's client list); null when the server does not tell
   * (CLIENT LIST refused, as on some managed Redis).
   */
  async workersOn(name: QueueName): Promise<number | null> {
    try {
      return await this.queue(name).getWorkersCount();
    } catch {
      return null;
    }
  }

  /**
   * One compute-cost measurement on a worker (`gpu`: one with a GPU), waited for: its result, or a
   * JobTimeoutError after `timeoutMs` (the job removed if no worker took it; one already running ends
   * on its own and its result is dropped). One attempt: a measurement is requested again, not retried.
   */
  async runCostMeasure(gpu: boolean, payload: CostMeasureJob, timeoutMs: number): Promise<unknown> {
    const name = gpu ? JobName.CostMeasureGpu : JobName.CostMeasure;
    const queue = this.queue(JOB_QUEUE[name]);
    const events = await this.costEvents(JOB_QUEUE[name]);
    const job = await queue.add(name, payload, {
      jobId: randomUUID(),
      attempts: 1,
      removeOnComplete: { age: 3600 },
      removeOnFail: { age: 24 * 3600 },
    });
    try {
      return await job.waitUntilFinished(events, timeoutMs);
    } catch (err) {
      const state = await job.getState().catch(() => 'unknown');
      if (state === 'failed' || state === 'completed') throw err;
      if (state === 'waiting' || state === 'prioritized' || state === 'delayed') await job.remove().catch(() => undefined);
      throw new JobTimeoutError(
        `no worker finished the measurement in ${Math.round(timeoutMs / 1000)} s (${state === 'active' ? 'one is still timing it; its result will be dropped' : 'none took it; it was withdrawn'})`,
      );
    }
  }

  /**
   * A running prune's retraining checks as fit.check jobs for every worker of its backend (`gpu`:
   * workers with a GPU), waited for; results in the checks' order. A check's job id is made of the
   * trial, the set and the seed: a check asked for again (a retried prune) finds the job queued or
   * done before, so nothing is fitted twice; one that failed is retried. Aborting withdraws the checks
   * no worker took yet. The first failed check fails the call, after the others end.
   */
  async runFitChecks(gpu: boolean, checks: FitCheckJob[], signal?: AbortSignal): Promise<unknown[]> {
    const name = gpu ? JobName.FitCheckGpu : JobName.FitCheck;
    const queue = this.queue(JOB_QUEUE[name]);
    const events = await this.costEvents(JOB_QUEUE[name]);
    const jobs = await Promise.all(
      checks.map(async (c) => {
        const job = await queue.add(name, c, {
          jobId: fitCheckJobId(c),
          attempts: this.config.ABACUS_TRIAL_ATTEMPTS,
          removeOnComplete: { age: 24 * 3600 },
          removeOnFail: { age: 24 * 3600 },
        });
        // an earlier ask's job: done (its result stands) or failed (asked again: retried)
        if ((await job.getState()) === 'failed') await job.retry('failed');
        return job;
      }),
    );
    let aborted: (() => void) | null = null;
    const onAbort = new Promise<never>((_, reject) => {
      aborted = () => reject(signal?.reason instanceof Error ? signal.reason : new Error('fit checks aborted'));
      signal?.addEventListener('abort', aborted, { once: true });
    });
    onAbort.catch(() => undefined);
    try {
      if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('fit checks aborted');
      const settled = await Promise.race([Promise.allSettled(jobs.map((j) => j.waitUntilFinished(events))), onAbort]);
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason instanceof Error ? failed.reason : new Error(String(failed.reason));
      return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value);
    } catch (err) {
      // no worker needs to start what nobody waits for any more
      await Promise.all(
        jobs.map(async (j) => {
          const state = await j.getState().catch(() => 'unknown');
          if (state === 'waiting' || state === 'prioritized' || state === 'delayed') await j.remove().catch(() => undefined);
        }),
      );
      throw err;
    } finally {
      if (aborted) signal?.removeEventListener('abort', aborted);
    }
  }

  /** the channel on which a prune announces its checks (workers open its samples and model ahead) */
  private get fitsChannel(): string {
    return `${this.config.ABACUS_QUEUE_PREFIX}:fits:announce`;
  }

  /** tells every worker listening on the fits queue to open a prune's state now */
  async announceFits(gpu: boolean, check: Pick<FitCheckJob, 'trialId' | 'experimentId'>): Promise<void> {
    const client = (await this.queue(QueueName.Experiments).client) as unknown as {
      publish(ch: string, m: string): Promise<number>;
    };
    await client.publish(this.fitsChannel, JSON.stringify({ gpu, ...check }));
  }

  /**
   * Calls `fn` for every prune that announces its checks on `gpu`'s queue (see announceFits), until
   * the returned function is called.
   */
  async onFitsAnnounced(
    gpu: boolean,
    fn: (check: Pick<FitCheckJob, 'trialId' | 'experimentId'>) => void,
  ): Promise<() => Promise<void>> {
    const sub = new Redis({ ...(redisConnection(this.config) as RedisOptions), lazyConnect: true });
    await sub.connect();
    await sub.subscribe(this.fitsChannel);
    sub.on('message', (_ch: string, message: string) => {
      try {
        const m = JSON.parse(message) as { gpu?: unknown; trialId?: unknown; experimentId?: unknown };
        if (m.gpu === gpu && typeof m.trialId === 'string' && typeof m.experimentId === 'string') {
          fn({ trialId: m.trialId, experimentId: m.experimentId });
        }
      } catch {
        // not an announcement of ours
      }
    });
    return async () => {
      await sub.quit().catch(() => sub.disconnect());
    };
  }

  private readonly events = new Map<QueueName, Promise<QueueEvents>>();

  private costEvents(name: QueueName): Promise<QueueEvents> {
    let e = this.events.get(name);
    if (!e) {
      const qe = new QueueEvents(name, { connection: redisConnection(this.config), prefix: this.config.ABACUS_QUEUE_PREFIX });
      e = qe.waitUntilReady().then(() => qe);
      this.events.set(name, e);
    }
    return e;
  }

  async ping(): Promise<string> {
    const client = (await this.queue(QueueName.Experiments).client) as unknown as { ping(): Promise<string> };
    return client.ping();
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    await Promise.all([...this.events.values()].map(async (e) => (await e).close()));
    await this.flows.close();
  }
}
