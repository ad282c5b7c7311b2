import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import { Logger, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AppConfig } from '@abacus/configs';
import { createDataSource } from '@abacus/data';
import { QueueService, WorkerHost } from '@abacus/queue';
import { DeliverySweeper } from '@abacus/serving';
import { Mailer, ReportSweeper } from '@abacus/reports';
import { ExperimentReaper, selectBackend, setDeviceFaultInjection, type WorkflowContext } from '@abacus/workflows';
import { injectDeviceFault } from '@abacus/runtime';
import { WORKFLOW_CONTEXT, WorkerModule } from './worker.module';

export interface WorkerHandle {
  ctx: INestApplicationContext;
  stop(graceMs?: number): Promise<void>;
}

export interface WorkerStartOptions {
  logger?: false;
  /**
   * After a GPU fault lost this process's CUDA context (the failed job's retry already queued): the
   * worker has stopped taking jobs and has been stopped; main.ts exits non-zero so the supervisor
   * (scripts/gpu-host.sh, docker compose, systemd, Kubernetes) restarts it.
   */
  onDeviceFault?: (err: Error) => void;
}

/** Starts the worker (used by main.ts and by the integration tests). */
export async function startWorker(config: AppConfig, opts: WorkerStartOptions = {}): Promise<WorkerHandle> {
  const ds = createDataSource(config);
  await ds.initialize();
  if (await ds.showMigrations()) {
    await ds.destroy();
    throw new Error('the database has pending migrations: run `npm run migrate` first');
  }
  const backend = selectBackend(config.ABACUS_RUNTIME_BACKEND);
  Logger.log(`runtime backend: ${backend.backend} — ${backend.reason}`, 'abacus-worker');
  const ctx = await NestFactory.createApplicationContext(WorkerModule.forRoot(config, ds, backend), {
    logger: opts.logger === false ? false : ['error', 'warn', 'log'],
  });
  const host = ctx.get(WorkerHost);
  if (config.ABACUS_DEBUG_DEVICE_FAULT) {
    const marker = path.join(config.ABACUS_DATA_DIR, '.debug-device-fault-injected');
    Logger.warn(
      `fault injection on: the first ${config.ABACUS_DEBUG_DEVICE_FAULT} trial (once per data directory: ${marker}) starts with a GPU fault`,
      'abacus-worker',
    );
    setDeviceFaultInjection({
      trialKind: config.ABACUS_DEBUG_DEVICE_FAULT,
      claim: (trialId) => {
        try {
          fs.mkdirSync(config.ABACUS_DATA_DIR, { recursive: true });
          fs.writeFileSync(marker, `${trialId}\n`, { flag: 'wx' });
          return true;
        } catch {
          return false;
        }
      },
      inject: () => injectDeviceFault(backend.backend, backend.devices > 0 ? 0 : undefined),
    });
  }
  host.start();
  const reaper = ctx.get(ExperimentReaper);
  reaper.start(config.ABACUS_REAPER_INTERVAL_MS);
  const sweeper = ctx.get(DeliverySweeper);
  sweeper.start(config.ABACUS_REAPER_INTERVAL_MS);
  const reports = ctx.get(ReportSweeper);
  // schedules whose scheduler Redis lost are restored at start-up, then on every pass
  await reports.sweepOnce().catch((err: Error) => Logger.warn(`report sweep failed: ${err.message}`, 'abacus-worker'));
  reports.start(config.ABACUS_REAPER_INTERVAL_MS);
  const workflows = ctx.get<symbol, WorkflowContext>(WORKFLOW_CONTEXT);
  // scratch folders of this host's workers that were killed mid-trial (the trials run again elsewhere)
  try {
    const swept = workflows.dataDir.sweepScratch();
    if (swept.length) Logger.log(`removed ${swept.length} scratch folder(s) of stopped workers`, 'abacus-worker');
  } catch (err) {
    Logger.warn(`sweeping scratch folders failed: ${(err as Error).message}`, 'abacus-worker');
  }
  // without a store, built sets unused for ABACUS_BUILT_KEEP_DAYS leave the data directory
  const samples = workflows.samples;
  const keepMs = config.ABACUS_BUILT_KEEP_DAYS * 86_400_000;
  const prune = () => {
    try {
      samples.pruneUnused(keepMs);
    } catch (err) {
      Logger.warn(`pruning unused built samples failed: ${(err as Error).message}`, 'abacus-worker');
    }
  };
  prune();
  const pruning = keepMs > 0 ? setInterval(prune, 6 * 3_600_000) : null;
  pruning?.unref();
  Logger.log(
    `worker up (trial concurrency ${Math.max(config.ABACUS_WORKER_CONCURRENCY, backend.devices)}, backend ${backend.backend})`,
    'abacus-worker',
  );
  if (backend.devices > 1) {
    Logger.warn(
      `this worker drives ${backend.devices} GPUs: a GPU fault that loses the CUDA context of one of them restarts the ` +
        `whole process and every trial on it; one worker per GPU (CUDA_VISIBLE_DEVICES, as scripts/gpu-host.sh starts them) ` +
        `confines a fault to its GPU`,
      'abacus-worker',
    );
  }
  let stopping: Promise<void> | null = null;
  const handle: WorkerHandle = {
    ctx,
    stop: (graceMs?: number) => (stopping ??= stopAll(graceMs)),
  };
  host.onDeviceFaultDo((err) => {
    // jobs still running on the lost context fail fast or are released at the end of the grace period
    void handle
      .stop()
      .catch(() => undefined)
      .then(() => opts.onDeviceFault?.(err));
  });
  return handle;
  async function stopAll(graceMs?: number): Promise<void> {
    if (pruning) clearInterval(pruning);
    await reaper.stop();
    await sweeper.stop();
    await reports.stop();
    await host.stop(graceMs);
    await ctx.get(QueueService).close();
    ctx.get<typeof Mailer, Mailer | null>(Mailer)?.close();
    await ctx.close();
    await ds.destroy();
  }
}
