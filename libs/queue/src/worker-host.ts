import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Logger } from '@nestjs/common';
import type { AppConfig } from '@abacus/configs';
import { describeZodError } from '@abacus/core';
import { JOB_PAYLOAD_SCHEMAS, JOB_QUEUE, JobName, QueueName, isJobName, type JobPayloads } from './queue-names';
import { redisConnection } from './queue.service';
import { isDeviceFaultError, toJobError } from './error-class';

export interface JobContext {
  job: Job;
  /** aborted when the worker shuts down before the job finished; the job is then released, not failed */
  signal: AbortSignal;
  /** the job's lock token: a handler that waits on other work moves its job to delayed with it */
  token?: string;
}

export type JobHandler<N extends JobName> = (payload: JobPayloads[N], ctx: JobContext) => Promise<unknown>;
export type JobHandlers = { [K in JobName]: JobHandler<K> };

export class MissingHandlerError extends Error {}

const SHUTDOWN = 'worker-shutdown';

/** Runs BullMQ workers for every queue and dispatches each job to its handler by name. */
export class WorkerHost {
  private readonly logger = new Logger(WorkerHost.name);
  private readonly workers: Worker[] = [];
  private readonly active = new Map<string, AbortController>();
  private deviceFaultHandler: ((err: Error) => void) | null = null;
  private deviceFault: Error | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly handlers: Partial<JobHandlers>,
    /** queues this process does not listen on (a worker without a GPU skips the GPU cost queue) */
    private readonly skip: QueueName[] = [],
    /** fit.check jobs at once (the GPU lanes of the worker; 1 off the GPU) */
    private readonly opts: { fits?: number } = {},
  ) {
    // every job of a queue this process listens on needs its handler
    const missing = Object.values(JobName).filter((n) => !skip.includes(JOB_QUEUE[n]) && typeof handlers[n] !== 'function');
    if (missing.length) {
      throw new MissingHandlerError(`worker refuses to start: no handler for job(s) ${missing.join(', ')}`);
    }
  }

  private readonly startHooks: (() => void)[] = [];
  private readonly stopHooks: (() => Promise<void>)[] = [];

  /** runs when the workers start (e.g. subscriptions that feed handlers) */
  onStart(fn: () => void): void {
    this.startHooks.push(fn);
  }

  /** runs after the workers stopped */
  onStop(fn: () => Promise<void>): void {
    this.stopHooks.push(fn);
  }

  start(): void {
    const connection = redisConnection(this.config);
    for (const queueName of this.queueNames) {
      const worker = new Worker(queueName, (job, token) => this.process(job, token), {
        connection,
        prefix: this.config.ABACUS_QUEUE_PREFIX,
        concurrency:
          queueName === QueueName.Fits || queueName === QueueName.FitsGpu
            ? (this.opts.fits ?? 1)
            : WorkerHost.concurrency(queueName, this.config.ABACUS_WORKER_CONCURRENCY),
        lockDuration: this.config.ABACUS_JOB_LOCK_MS,
        stalledInterval: this.config.ABACUS_JOB_LOCK_MS,
        maxStalledCount: 2,
        autorun: true,
      });
      worker.on('failed', (job, err) => {
        const final = !job || err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
        const data = job?.data as
          { experimentId?: string; deliveryId?: string; reportId?: string; scheduleId?: string; requestId?: string } | undefined;
        const of = data?.requestId
          ? `cost measurement of request ${data.requestId}`
          : data?.experimentId
            ? `experiment ${data.experimentId}`
            : data?.reportId
              ? `report ${data.reportId}`
              : data?.scheduleId
                ? `report schedule ${data.scheduleId}`
                : `delivery ${data?.deliveryId}`;
        const what = `job ${job?.name} ${job?.id} (${of})`;
        if (final) this.logger.error(`${what} failed for good after attempt ${job?.attemptsMade}: ${err.message}`, err.stack);
        else this.logger.warn(`${what} failed attempt ${job?.attemptsMade}, will retry: ${err.message}`);
        // the job's failure is recorded (and its retry queued) by now: a lost CUDA context ends the process
        if (isDeviceFaultError(err)) this.onDeviceFault(err);
      });
      worker.on('error', (err) => this.logger.error(`queue ${queueName}: ${err.message}`));
      this.workers.push(worker);
    }
    this.logger.log(`listening on queues ${this.queueNames.join(', ')} (prefix ${this.config.ABACUS_QUEUE_PREFIX})`);
    for (const fn of this.startHooks) fn();
  }

  /** the queues this process listens on */
  get queueNames(): QueueName[] {
    return Object.values(QueueName).filter((q) => !this.skip.includes(q));
  }

  /**
   * Jobs at once per queue: trials as configured; cost measurements one at a time (two timings side
   * by side would distort each other); webhooks and reports 4.
   */
  static concurrency(queue: QueueName, trials: number): number {
    if (queue === QueueName.Trials) return trials;
    if (queue === QueueName.Costs || queue === QueueName.CostsGpu) return 1;
    return 4;
  }

  /**
   * Called once, after the first job that failed with a GPU fault (a lost CUDA context): the worker
   * must take no more jobs; `handler` stops it and ends the process, whose supervisor restarts it.
   */
  onDeviceFaultDo(handler: (err: Error) => void): void {
    this.deviceFaultHandler = handler;
  }

  /** the GPU fault that stopped this worker, if one did */
  get faulted(): Error | null {
    return this.deviceFault;
  }

  private onDeviceFault(err: Error): void {
    if (this.deviceFault) return;
    this.deviceFault = err;
    this.logger.error(
      `GPU fault: this process's CUDA context is lost (${err.message}); the worker takes no more jobs and exits to be restarted`,
    );
    // no more jobs for this process, whatever the handler does
    for (const w of this.workers) void w.pause(true).catch(() => undefined);
    this.deviceFaultHandler?.(err);
  }

  private async process(job: Job, token: string | undefined): Promise<unknown> {
    if (this.deviceFault) {
      // taken just before the pause: back to the queue for a healthy process, no attempt counted
      if (token) {
        await job.moveToDelayed(Date.now() + 500, token);
        throw new DelayedError();
      }
      throw new Error(`this worker's CUDA context is lost: ${this.deviceFault.message}`);
    }
    if (!isJobName(job.name) || JOB_QUEUE[job.name] !== job.queueName) {
      throw new UnrecoverableError(`no handler for job "${job.name}" on queue ${job.queueName}`);
    }
    const name: JobName = job.name;
    const parsed = JOB_PAYLOAD_SCHEMAS[name].safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`invalid payload for ${name}: ${describeZodError(parsed.error)}`);
    const controller = new AbortController();
    const key = `${job.queueName}:${job.id}`;
    this.active.set(key, controller);
    try {
      const handler = this.handlers[name] as JobHandler<JobName>;
      return await handler(parsed.data as JobPayloads[JobName], { job, signal: controller.signal, token });
    } catch (err) {
      // the handler parked its job to look again later (it moved it to delayed itself)
      if (err instanceof DelayedError) throw err;
      if (controller.signal.aborted && controller.signal.reason === SHUTDOWN && token) {
        // released, not failed: another worker (or this one after restart) picks it up again
        await job.moveToDelayed(Date.now() + 500, token);
        throw new DelayedError();
      }
      // deterministic failures are not retried (see error-class.ts)
      throw toJobError(err);
    } finally {
      this.active.delete(key);
    }
  }

  /** Stops taking jobs; lets running ones finish for up to graceMs, then releases them back to the queue. */
  async stop(graceMs = this.config.ABACUS_SHUTDOWN_GRACE_MS): Promise<void> {
    // a worker closed while its connections still initialise is disconnected, not quit, and the
    // commands of its initialisation then fail with nobody awaiting them ("Connection is closed.",
    // an unhandled rejection): let them finish first (a few ms; at most 5 s when Redis is gone)
    await Promise.race([
      Promise.all(this.workers.map((w) => w.waitUntilReady().catch(() => undefined))),
      new Promise((r) => setTimeout(r, 5_000).unref()),
    ]);
    const closing = Promise.all(this.workers.map((w) => w.close()));
    const timer = setTimeout(() => {
      if (this.active.size) this.logger.warn(`grace period over: releasing ${this.active.size} running job(s)`);
      for (const c of this.active.values()) c.abort(SHUTDOWN);
    }, graceMs);
    try {
      await closing;
    } finally {
      clearTimeout(timer);
      for (const fn of this.stopHooks) await fn().catch(() => undefined);
    }
  }
}
