import 'reflect-metadata';
import { Logger, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AppConfig } from '@abacus/configs';
import { createDataSource } from '@abacus/data';
import { QueueService, WorkerHost } from '@abacus/queue';
import { DeliverySweeper } from '@abacus/serving';
import { Mailer, ReportSweeper } from '@abacus/reports';
import { ExperimentReaper, selectBackend } from '@abacus/workflows';
import { WorkerModule } from './worker.module';

export interface WorkerHandle {
  ctx: INestApplicationContext;
  stop(graceMs?: number): Promise<void>;
}

/** Starts the worker (used by main.ts and by the integration tests). */
export async function startWorker(config: AppConfig, opts: { logger?: false } = {}): Promise<WorkerHandle> {
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
  host.start();
  const reaper = ctx.get(ExperimentReaper);
  reaper.start(config.ABACUS_REAPER_INTERVAL_MS);
  const sweeper = ctx.get(DeliverySweeper);
  sweeper.start(config.ABACUS_REAPER_INTERVAL_MS);
  const reports = ctx.get(ReportSweeper);
  // schedules whose scheduler Redis lost are restored at start-up, then on every pass
  await reports.sweepOnce().catch((err: Error) => Logger.warn(`report sweep failed: ${err.message}`, 'abacus-worker'));
  reports.start(config.ABACUS_REAPER_INTERVAL_MS);
  Logger.log(
    `worker up (trial concurrency ${Math.max(config.ABACUS_WORKER_CONCURRENCY, backend.devices)}, backend ${backend.backend})`,
    'abacus-worker',
  );
  if (backend.devices > 1) {
    Logger.warn(
      `this worker drives ${backend.devices} GPUs: on a 2 x H100 host, models of two GPUs trained in one process failed now ` +
        `and then (cublasLtMatmul status 14, cub 'invalid device ordinal'); run one worker per GPU (CUDA_VISIBLE_DEVICES), ` +
        `as scripts/gpu-host.sh does`,
      'abacus-worker',
    );
  }
  return {
    ctx,
    stop: async (graceMs?: number) => {
      await reaper.stop();
      await sweeper.stop();
      await reports.stop();
      await host.stop(graceMs);
      await ctx.get(QueueService).close();
      ctx.get<typeof Mailer, Mailer | null>(Mailer)?.close();
      await ctx.close();
      await ds.destroy();
    },
  };
}
