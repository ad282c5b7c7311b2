import os from 'node:os';
import { Module, type DynamicModule } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { buildThreads, hostBatchThreads, hostFits, scoreThreads, scoreThreadsAlone, type AppConfig } from '@abacus/configs';
import { DataDir, SampleSetData, openDataDir } from '@abacus/catalog';
import { SYSTEM_SCOPE } from '@abacus/core';
import { SampleSetEntity } from '@abacus/data';
import { buildThreadPool } from '@abacus/samples';
import { JobName, QueueName, QueueService, WorkerHost, type JobHandlers } from '@abacus/queue';
import { DeliverySweeper, ServingWebhookHandler } from '@abacus/serving';
import { Mailer, ReportDeliveryHandler, ReportFireHandler, ReportRunHandler, ReportSweeper } from '@abacus/reports';
import {
  AblateTrialHandler,
  BuiltSamplesCache,
  CompareTrialHandler,
  CostLedgerService,
  CostMeasureHandler,
  ExperimentService,
  MultiplyTrialHandler,
  DivideSelectHandler,
  DivideTierHandler,
  DividePublishHandler,
  MultiplyCompareHandler,
  DevicePool,
  ExperimentReaper,
  FinalizeExperimentHandler,
  FitCheckHandler,
  PruneFitStates,
  QueueFitDispatch,
  ModelTrainer,
  PLANNERS,
  PruneTrialHandler,
  ScoreTrialHandler,
  DiscoverTrialHandler,
  TrainTrialHandler,
  TrialLedger,
  WebhookNotifier,
  measureCostsSchema,
  type BackendSelection,
  type WorkflowContext,
} from '@abacus/workflows';

export const WORKFLOW_CONTEXT = Symbol('WORKFLOW_CONTEXT');

/** The worker's application context: one handler per job name, hosted on BullMQ workers. */
@Module({})
export class WorkerModule {
  static forRoot(config: AppConfig, ds: DataSource, backend: BackendSelection): DynamicModule {
    // the data directory is this host's working copy of the store when ABACUS_STORE_URL names one
    const opened = openDataDir(config);
    return {
      module: WorkerModule,
      providers: [
        { provide: DataSource, useValue: ds },
        { provide: DataDir, useValue: opened.dataDir },
        {
          // sets registered by reference: read through the host's bounded cache (shared by its worker processes)
          provide: SampleSetData,
          inject: [DataDir],
          useFactory: (dataDir: DataDir) => new SampleSetData(dataDir, opened.stores, opened.cache),
        },
        { provide: TrialLedger, useFactory: () => new TrialLedger(ds) },
        { provide: QueueService, useFactory: () => new QueueService(config) },
        {
          provide: ExperimentReaper,
          inject: [QueueService],
          useFactory: (queue: QueueService) =>
            new ExperimentReaper(ds, queue, {
              minAgeMs: config.ABACUS_REAPER_MIN_AGE_MS,
              maxAttempts: config.ABACUS_TRIAL_ATTEMPTS,
            }),
        },
        {
          provide: DeliverySweeper,
          inject: [QueueService],
          // deliveries untouched for the reaper's min age; one still retrying keeps its job (same job id: no-op)
          useFactory: (queue: QueueService) => new DeliverySweeper(ds, queue, config.ABACUS_REAPER_MIN_AGE_MS),
        },
        {
          provide: ReportSweeper,
          inject: [QueueService],
          useFactory: (queue: QueueService) => new ReportSweeper(ds, queue, config.ABACUS_REAPER_MIN_AGE_MS),
        },
        { provide: Mailer, useFactory: () => Mailer.fromConfig(config) },
        {
          provide: WORKFLOW_CONTEXT,
          inject: [TrialLedger, DataDir, SampleSetData, QueueService],
          useFactory: (ledger: TrialLedger, dataDir: DataDir, data: SampleSetData, queue: QueueService): WorkflowContext => {
            // the sample build threads start with the worker and are kept, not started by each build
            buildThreadPool(buildThreads(config))?.prestart(buildThreads(config));
            return {
              ds,
              ledger,
              dataDir,
              data,
              samples: new BuiltSamplesCache(dataDir, {
                memoryLimitBytes: (config.ABACUS_SAMPLE_MEMORY_MB || Math.floor((0.75 * os.totalmem()) / 2 ** 20)) * 2 ** 20,
                threads: buildThreads(config),
                duckdbMemoryMb: config.ABACUS_DUCKDB_MEMORY_MB,
                rangeRows: config.ABACUS_BUILD_RANGE_ROWS,
                openSamples: async (recipe, onProgress) =>
                  data.open(await ds.getRepository(SampleSetEntity).findOneByOrFail({ id: recipe.sampleSetId }), onProgress),
              }),
              trainer: new ModelTrainer(dataDir, {
                backend: backend.backend,
                threads: config.ABACUS_RUNTIME_THREADS,
                batchThreads: hostBatchThreads(config),
              }),
              notifier: new WebhookNotifier(config.ABACUS_NOTIFY_WEBHOOK_URL, config.ABACUS_NOTIFY_WEBHOOK_SECRET, {
                allow: config.ABACUS_WEBHOOK_ALLOWED_HOSTS,
              }),
              devices: new DevicePool(
                backend.devices,
                config.ABACUS_GPU_LANES,
                config.ABACUS_GPU_BORROW,
                config.ABACUS_PRUNE_LOOKAHEAD,
                config.ABACUS_CONFIRM_AHEAD === 'auto' ? backend.devices > 0 : config.ABACUS_CONFIRM_AHEAD,
                config.ABACUS_FINE_TUNE_IN_PLACE,
                hostFits(config),
              ),
              // a prune's checks over every worker of the backend (fit.check jobs); this process's open prunes
              fits: { dispatch: new QueueFitDispatch(queue, config.ABACUS_PRUNE_SPREAD), states: new PruneFitStates() },
              // storage and communication, measured from the values; compute is a share of a model's forward,
              // measured when a model that reads them is named (abacus features costs --measure --model)
              measureCosts: async (businessLine, features) => {
                const ledger = new CostLedgerService(ds, dataDir, {
                  backend: config.ABACUS_RUNTIME_BACKEND,
                  threads: config.ABACUS_RUNTIME_THREADS,
                  openSamples: (ss) => data.open(ss),
                });
                const r = await ledger.measure(SYSTEM_SCOPE, measureCostsSchema.parse({ businessLine, features, compute: false }));
                return { measured: r.measurement.measured.length, skipped: r.measurement.skipped };
              },
            };
          },
        },
        {
          provide: WorkerHost,
          inject: [TrialLedger, DataDir, WORKFLOW_CONTEXT, QueueService, Mailer, SampleSetData],
          useFactory: (
            ledger: TrialLedger,
            dataDir: DataDir,
            w: WorkflowContext,
            queue: QueueService,
            mailer: Mailer | null,
            data: SampleSetData,
          ) => {
            const finalize = new FinalizeExperimentHandler(ds, PLANNERS);
            const score = new ScoreTrialHandler(ds, ledger, dataDir, {
              threads: scoreThreads(config),
              threadsAlone: scoreThreadsAlone(config),
              // on a GPU worker only: there the fit beside the scoring runs on the device (measured on an
              // H200 host); on the CPU the fit takes the same cores as the build, and nothing was gained
              buildWaitMs: backend.devices > 0 ? config.ABACUS_SCORE_BUILD_WAIT_MS : 0,
              buildWaitCells: config.ABACUS_SCORE_BUILD_WAIT_CELLS,
              duckdbMemoryMb: config.ABACUS_DUCKDB_MEMORY_MB,
              data,
            });
            const train = new TrainTrialHandler(w);
            const ablate = new AblateTrialHandler(w);
            const prune = new PruneTrialHandler(w);
            const fitCheck = new FitCheckHandler(w, w.fits!.states);
            const compare = new CompareTrialHandler(w);
            const discover = new DiscoverTrialHandler(w);
            const multiply = new MultiplyTrialHandler(w);
            const multiplyCompare = new MultiplyCompareHandler(w);
            const divideSelect = new DivideSelectHandler(w);
            const divideTier = new DivideTierHandler(w);
            const dividePublish = new DividePublishHandler(w);
            const servingWebhook = new ServingWebhookHandler(ds, config.ABACUS_WEBHOOK_ALLOWED_HOSTS);
            const reportFire = new ReportFireHandler(ds, queue);
            const reportRun = new ReportRunHandler(
              ds,
              queue,
              new ExperimentService(ds, queue, PLANNERS),
              new CostLedgerService(ds, dataDir, {
                backend: config.ABACUS_RUNTIME_BACKEND,
                threads: config.ABACUS_RUNTIME_THREADS,
                openSamples: (ss) => data.open(ss),
              }),
              dataDir,
              {
                thresholds: { psi: config.ABACUS_REPORT_PSI_THRESHOLD, ivDrift: config.ABACUS_REPORT_IV_DRIFT },
                webhookUrl: config.ABACUS_NOTIFY_WEBHOOK_URL,
                smtp: mailer !== null,
                apiUrl: config.ABACUS_API_URL,
                openSamples: (ss) => data.open(ss),
              },
            );
            const reportDeliver = new ReportDeliveryHandler(ds, {
              allow: config.ABACUS_WEBHOOK_ALLOWED_HOSTS,
              webhookSecret: config.ABACUS_NOTIFY_WEBHOOK_SECRET,
              mailer,
              apiUrl: config.ABACUS_API_URL,
            });
            const costs = new CostMeasureHandler({ backend: backend.backend, threads: config.ABACUS_RUNTIME_THREADS });
            const handlers: JobHandlers = {
              [JobName.FinalizeExperiment]: (p) => finalize.handle(p),
              [JobName.ScoreTrial]: (p, ctx) => score.handle(p, ctx),
              [JobName.TrainTrial]: (p, ctx) => train.handle(p, ctx),
              [JobName.AblateTrial]: (p, ctx) => ablate.handle(p, ctx),
              [JobName.PruneTrial]: (p, ctx) => prune.handle(p, ctx),
              [JobName.CompareTrial]: (p, ctx) => compare.handle(p, ctx),
              [JobName.DiscoverTrial]: (p, ctx) => discover.handle(p, ctx),
              [JobName.MultiplyTrial]: (p, ctx) => multiply.handle(p, ctx),
              [JobName.MultiplyCompareTrial]: (p, ctx) => multiplyCompare.handle(p, ctx),
              [JobName.DivideSelectTrial]: (p, ctx) => divideSelect.handle(p, ctx),
              [JobName.DivideTierTrial]: (p, ctx) => divideTier.handle(p, ctx),
              [JobName.DividePublishTrial]: (p, ctx) => dividePublish.handle(p, ctx),
              [JobName.ServingWebhook]: (p, ctx) => servingWebhook.handle(p, ctx),
              [JobName.ReportFire]: (p, ctx) => reportFire.handle(p, ctx),
              [JobName.ReportRun]: (p, ctx) => reportRun.handle(p, ctx),
              [JobName.ReportDeliver]: (p, ctx) => reportDeliver.handle(p, ctx),
              [JobName.CostMeasure]: (p) => costs.handle(p),
              [JobName.CostMeasureGpu]: (p) => costs.handle(p),
              [JobName.FitCheck]: (p, ctx) => fitCheck.handle(p, ctx),
              [JobName.FitCheckGpu]: (p, ctx) => fitCheck.handle(p, ctx),
            };
            // one trial per GPU at a time: a worker that sees N GPUs runs N trials concurrently
            const concurrency = Math.max(config.ABACUS_WORKER_CONCURRENCY, backend.devices);
            // the GPU cost and fits queues are for workers with a GPU; a GPU worker's checks are fitted on
            // its GPUs, not on the CPU queue; checks at once: the lanes of every GPU (one off the GPU)
            const host = new WorkerHost(
              { ...config, ABACUS_WORKER_CONCURRENCY: concurrency },
              handlers,
              backend.devices > 0 ? [QueueName.Fits] : [QueueName.CostsGpu, QueueName.FitsGpu],
              { fits: backend.devices > 0 ? config.ABACUS_GPU_LANES * backend.devices : 1 },
            );
            // workers open an announced prune's samples and model ahead of its first check
            let unsubscribe: Promise<() => Promise<void>> | null = null;
            host.onStart(() => {
              unsubscribe = queue.onFitsAnnounced(backend.devices > 0, (c) => fitCheck.prepare(c));
              unsubscribe.catch(() => undefined);
            });
            host.onStop(async () => {
              await (
                await unsubscribe?.catch(() => null)
              )?.();
              w.fits!.states.clear();
            });
            return host;
          },
        },
      ],
    };
  }
}
