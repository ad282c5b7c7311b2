import { Module, type DynamicModule } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { DataSource } from 'typeorm';
import type { AppConfig } from '@abacus/configs';
import { BusinessLineService, DataDir, FeatureService, ModelService, SampleSetService } from '@abacus/catalog';
import { QueueService } from '@abacus/queue';
import { ExperimentService, PLANNERS } from '@abacus/workflows';
import { APP_CONFIG } from './common/tokens';
import { BusinessLinesController } from './controllers/business-lines.controller';
import { ExperimentsController } from './controllers/experiments.controller';
import { FeaturesController } from './controllers/features.controller';
import { HealthController } from './controllers/health.controller';
import { ModelsController } from './controllers/models.controller';
import { SampleSetsController } from './controllers/sample-sets.controller';
import { UiController } from './controllers/ui.controller';

/** The API: controllers here, domain services from libs/, wired with an initialised DataSource and queue. */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, ds: DataSource, queue: QueueService): DynamicModule {
    const dataDir = new DataDir(config.ABACUS_DATA_DIR);
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
      ],
      controllers: [
        HealthController,
        BusinessLinesController,
        FeaturesController,
        SampleSetsController,
        ModelsController,
        ExperimentsController,
        UiController,
      ],
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: DataSource, useValue: ds },
        { provide: QueueService, useValue: queue },
        { provide: DataDir, useValue: dataDir },
        { provide: BusinessLineService, useFactory: () => new BusinessLineService(ds) },
        { provide: SampleSetService, useFactory: () => new SampleSetService(ds, dataDir, limits) },
        { provide: FeatureService, useFactory: () => new FeatureService(ds, dataDir, limits) },
        { provide: ModelService, useFactory: () => new ModelService(ds) },
        { provide: ExperimentService, useFactory: () => new ExperimentService(ds, queue, PLANNERS) },
      ],
    };
  }
}
