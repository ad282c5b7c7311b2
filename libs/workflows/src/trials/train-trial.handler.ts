import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { runTrial } from './trial-runner';
import { trainTrialParamsSchema } from './train-trial.schema';
import { trialBySeq, type WorkflowContext } from './workflow-context';

/** Trains one model of an experiment (or reuses an identical earlier training) and evaluates it. */
export class TrainTrialHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.TrainTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, async ({ trial, experiment, checkpoint, progress, signal, logger }) => {
      const params = trainTrialParamsSchema.parse(trial.params);
      let features = params.recipe.features as ResolvedFeature[];
      let dropped: string[] = [];
      if (params.dropRemovableOf !== undefined) {
        const prune = await trialBySeq(this.w.ds, experiment.id, params.dropRemovableOf);
        dropped = (prune.metrics?.removable as string[] | undefined) ?? [];
        features = features.filter((f) => !dropped.includes(f.name));
      }
      const recipe = { ...params.recipe, features };
      await progress(0.02, `building samples (${features.length} features)`);
      const built = await this.w.samples.get(recipe, features, (f, m) => void progress(0.02 + 0.2 * f, m).catch(() => undefined));
      checkpoint();
      await progress(0.25, built.cached ? 'samples from cache; training' : 'samples built; training');
      const trained = await this.w.trainer.trainOrReuse(built, recipe.architecture, recipe.training, {
        signal,
        onProgress: (f, m) => void progress(0.25 + 0.7 * f, m).catch(() => undefined),
      });
      checkpoint();
      logger.log(
        `${params.role} model: ${features.length} features, test AUC ${trained.metrics.auc.toFixed(4)}${trained.cached ? ' (reused)' : ''}`,
      );
      return {
        backend: trained.backend,
        metrics: {
          role: params.role,
          candidate: params.candidate ?? null,
          features: features.map((f) => f.name),
          dropped,
          auc: trained.metrics.auc,
          logloss: trained.metrics.logloss,
          calibration: trained.metrics.calibration,
          testRows: built.test.rows,
          trainRows: built.train.rows,
          steps: trained.metrics.steps,
          epochs: trained.metrics.epochs,
          stoppedEarly: trained.metrics.stoppedEarly,
          trainMs: trained.metrics.trainMs,
          samplesKey: built.key,
          samplesCached: built.cached,
          modelKey: trained.key,
          modelDir: trained.dir,
          modelCached: trained.cached,
        },
      };
    });
  }
}
