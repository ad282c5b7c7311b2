import { Module, type DynamicModule, type MiddlewareConsumer, type NestModule, type Type } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { MulterModule } from '@nestjs/platform-express';
import { ThrottlerModule } from '@nestjs/throttler';
import { DataSource } from 'typeorm';
import type { AppConfig } from '@abacus/configs';
import { ApiKeyService, AuditService, KeyRevocationBus } from '@abacus/access';
import {
  BusinessLineService,
  DataDir,
  openDataDir,
  SampleSetData,
  EmbeddingService,
  FeatureService,
  ModelService,
  SampleSetService,
} from '@abacus/catalog';
import { QueueService } from '@abacus/queue';
import { ActiveTierCache, ServingService } from '@abacus/serving';
import { ReportScheduleService, ReportService } from '@abacus/reports';
import { CostLedgerService, ExperimentService, FeatureProvenanceService, PLANNERS } from '@abacus/workflows';
import { AccessGuard } from './common/access.guard';
import { AuthenticateMiddleware } from './common/authenticate.middleware';
import { RateLimitGuard } from './common/rate-limit.guard';
import { APP_CONFIG } from './common/tokens';
import { AuditController } from './controllers/audit.controller';
import { BusinessLinesController } from './controllers/business-lines.controller';
import { EmbeddingsController } from './controllers/embeddings.controller';
import { ExperimentsController } from './controllers/experiments.controller';
import { FeaturesController } from './controllers/features.controller';
import { HealthController } from './controllers/health.controller';
import { KeysController } from './controllers/keys.controller';
import { ModelsController } from './controllers/models.controller';
import { SampleSetsController } from './controllers/sample-sets.controller';
import { ServingController } from './controllers/serving.controller';
import { ReportSchedulesController } from './controllers/report-schedules.controller';
import { ReportsController } from './controllers/reports.controller';

/** Every controller of the API; the access tests enumerate their routes from this list. */
export const CONTROLLERS: Type[] = [
  HealthController,
  BusinessLinesController,
  FeaturesController,
  SampleSetsController,
  ModelsController,
  ExperimentsController,
  EmbeddingsController,
  KeysController,
  AuditController,
  ServingController,
  ReportSchedulesController,
  ReportsController,
];

/** The API: controllers here, domain services from libs/, wired with an initialised DataSource and queue. */
@Module({})
export class AppModule implements NestModule {
  static forRoot(config: AppConfig, ds: DataSource, queue: QueueService): DynamicModule {
    // the data directory is this host's working copy of the store when ABACUS_STORE_URL names one
    const { dataDir, stores, cache } = openDataDir(config);
    const samples = new SampleSetData(dataDir, stores, cache);
    const limits = { maxColumns: config.ABACUS_MAX_COLUMNS, maxCategories: config.ABACUS_MAX_CATEGORIES };
    return {
      module: AppModule,
      imports: [
        // preservePath: the client's name arrives as sent, so a name with path parts is refused, not quietly cut
        MulterModule.register({
          dest: dataDir.tmpDir(),
          preservePath: true,
          limits: { fileSize: config.ABACUS_UPLOAD_LIMIT_MB * 1024 * 1024, files: 1, fields: 20, fieldSize: 64 * 1024 },
        }),
        ThrottlerModule.forRoot({
          throttlers: [{ name: 'default', ttl: 60_000, limit: config.ABACUS_RATE_LIMIT_PER_MIN }],
          errorMessage: `rate limit exceeded: at most ${config.ABACUS_RATE_LIMIT_PER_MIN} requests per minute per API key (ABACUS_RATE_LIMIT_PER_MIN)`,
        }),
      ],
      controllers: CONTROLLERS,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: DataSource, useValue: ds },
        { provide: QueueService, useValue: queue },
        { provide: DataDir, useValue: dataDir },
        {
          provide: ApiKeyService,
          useFactory: () =>
            new ApiKeyService(ds, {
              cacheMs: config.ABACUS_AUTH_CACHE_MS,
              ...(config.ABACUS_AUTH_CACHE_MS > 0
                ? { revocations: new KeyRevocationBus(config.ABACUS_REDIS_URL, config.ABACUS_QUEUE_PREFIX) }
                : {}),
            }),
        },
        { provide: AuditService, useFactory: () => new AuditService(ds) },
        { provide: BusinessLineService, useFactory: () => new BusinessLineService(ds) },
        {
          provide: SampleSetService,
          useFactory: () => new SampleSetService(ds, dataDir, limits, stores),
        },
        { provide: EmbeddingService, useFactory: () => new EmbeddingService(ds) },
        { provide: FeatureService, useFactory: () => new FeatureService(ds, dataDir, limits) },
        { provide: ModelService, useFactory: () => new ModelService(ds) },
        {
          provide: CostLedgerService,
          useFactory: () =>
            new CostLedgerService(ds, dataDir, {
              backend: config.ABACUS_RUNTIME_BACKEND,
              threads: config.ABACUS_RUNTIME_THREADS,
              openSamples: (ss) => samples.open(ss),
              workers: { queue, on: config.ABACUS_COST_MEASURE_ON, timeoutMs: config.ABACUS_COST_MEASURE_TIMEOUT_MS },
            }),
        },
        { provide: ExperimentService, useFactory: () => new ExperimentService(ds, queue, PLANNERS) },
        { provide: FeatureProvenanceService, useFactory: () => new FeatureProvenanceService(ds) },
        {
          provide: ServingService,
          useFactory: () => {
            // the cache rebuilds a missing entry from Postgres through the service (cold start, flushed Redis)
            const holder: { service?: ServingService } = {};
            const cache = new ActiveTierCache(config.ABACUS_REDIS_URL, config.ABACUS_QUEUE_PREFIX, (id) =>
              holder.service!.loadActive(id),
            );
            holder.service = new ServingService(
              ds,
              queue,
              cache,
              config.ABACUS_WEBHOOK_ALLOWED_HOSTS,
              config.ABACUS_SERVING_SCHEDULE_INTERVAL_MS,
            );
            return holder.service;
          },
        },
        {
          provide: ReportScheduleService,
          useFactory: () =>
            new ReportScheduleService(ds, queue, { cron: config.ABACUS_REPORT_CRON, timezone: config.ABACUS_REPORT_TZ }),
        },
        { provide: ReportService, useFactory: () => new ReportService(ds, queue) },
        // in this order: the rate limit counts refused requests too, then the key's role is checked
        { provide: APP_GUARD, useClass: RateLimitGuard },
        { provide: APP_GUARD, useClass: AccessGuard },
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(AuthenticateMiddleware).forRoutes('*path');
  }
}
