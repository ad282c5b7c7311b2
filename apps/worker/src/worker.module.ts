import { Module, type DynamicModule } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AppConfig } from '@abacus/configs';
import { DataDir } from '@abacus/catalog';
import { JobName, WorkerHost, type JobHandlers } from '@abacus/queue';
import { FinalizeExperimentHandler, PLANNERS, ScoreTrialHandler, TrialLedger } from '@abacus/workflows';

/** The worker's application context: one handler per job name, hosted on BullMQ workers. */
@Module({})
export class WorkerModule {
  static forRoot(config: AppConfig, ds: DataSource): DynamicModule {
    return {
      module: WorkerModule,
      providers: [
        { provide: DataSource, useValue: ds },
        { provide: DataDir, useValue: new DataDir(config.ABACUS_DATA_DIR) },
        { provide: TrialLedger, useFactory: () => new TrialLedger(ds) },
        { provide: FinalizeExperimentHandler, useFactory: () => new FinalizeExperimentHandler(ds, PLANNERS) },
        {
          provide: ScoreTrialHandler,
          inject: [TrialLedger, DataDir],
          useFactory: (ledger: TrialLedger, dataDir: DataDir) => new ScoreTrialHandler(ds, ledger, dataDir),
        },
        {
          provide: WorkerHost,
          inject: [FinalizeExperimentHandler, ScoreTrialHandler],
          useFactory: (finalize: FinalizeExperimentHandler, score: ScoreTrialHandler) => {
            const handlers: JobHandlers = {
              [JobName.FinalizeExperiment]: (p) => finalize.handle(p),
              [JobName.ScoreTrial]: (p, ctx) => score.handle(p, ctx),
            };
            return new WorkerHost(config, handlers);
          },
        },
      ],
    };
  }
}
