import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { runTrial, type TrialScope } from './trial-runner';
import { trainTrialParamsSchema } from './train-trial.schema';
import { trialBySeq, withDevice, type WorkflowContext } from './workflow-context';
import { recipeInit } from '../embeddings/recipe-init';

/** Trains one model of an experiment (or reuses an identical earlier training) and evaluates it. */
export class TrainTrialHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.TrainTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, (scope) => withDevice(this.w, (device) => this.run(scope, device)));
  }

  private async run({ trial, experiment, checkpoint, progress, signal, logger }: TrialScope, device: number | undefined) {
    const params = trainTrialParamsSchema.parse(trial.params);
    let features = params.recipe.features as ResolvedFeature[];
    let dropped: string[] = [];
    if (params.dropRemovableOf !== undefined) {
      const prune = await trialBySeq(this.w.ds, experiment.id, params.dropRemovableOf);
      dropped = (prune.metrics?.removable as string[] | undefined) ?? [];
      features = features.filter((f) => !dropped.includes(f.name));
    }
    const recipe = { ...params.recipe, features };
    const seeds = params.seeds ?? [recipe.training.seed];
    const runs = [
      { label: 'model', features },
      ...(params.compareWithFull ? [{ label: 'full model', features: params.recipe.features as ResolvedFeature[] }] : []),
    ];
    const total = runs.length * seeds.length;
    const results: {
      label: string;
      seed: number;
      auc: number;
      logloss: number;
      calibration: number;
      validationAuc: number;
      validationLogloss: number;
      cached: boolean;
    }[] = [];
    const timings = { buildMs: 0, trainMs: 0 };
    let first: {
      built: Awaited<ReturnType<WorkflowContext['samples']['get']>>;
      trained: Awaited<ReturnType<WorkflowContext['trainer']['trainOrReuse']>>;
    } | null = null;
    for (const run of runs) {
      for (const seed of seeds) {
        const done = results.length / total;
        const step = (f: number, m: string) => void progress(0.02 + 0.95 * (done + f / total), m).catch(() => undefined);
        let t0 = Date.now();
        const built = await this.w.samples.get(recipe, run.features, (f, m) => step(0.2 * f, m));
        timings.buildMs += Date.now() - t0;
        t0 = Date.now();
        checkpoint();
        const training = { ...recipe.training, seed };
        const trained = await this.w.trainer.trainOrReuse(
          built,
          recipe.architecture,
          training,
          {
            signal,
            device,
            onProgress: (f, m) => step(0.2 + 0.8 * f, `${run.label}, seed ${seed}: ${m}`),
          },
          recipeInit(this.w.dataDir, recipe, built),
        );
        timings.trainMs += Date.now() - t0;
        checkpoint();
        results.push({
          label: run.label,
          seed,
          auc: trained.metrics.auc,
          logloss: trained.metrics.logloss,
          calibration: trained.metrics.calibration,
          validationAuc: trained.metrics.validation.auc,
          validationLogloss: trained.metrics.validation.logloss,
          cached: trained.cached,
        });
        if (!first) first = { built, trained };
      }
    }
    const mean = (label: string, k: 'auc' | 'logloss' | 'calibration' | 'validationAuc' | 'validationLogloss') => {
      const xs = results.filter((r) => r.label === label).map((r) => r[k]);
      return xs.reduce((a, b) => a + b, 0) / xs.length;
    };
    const { built, trained } = first!;
    logger.log(
      `${params.role} model: ${features.length} features, test AUC ${mean('model', 'auc').toFixed(4)} over ${seeds.length} seed(s)`,
    );
    return {
      backend: trained.backend,
      metrics: {
        role: params.role,
        candidate: params.candidate ?? null,
        features: features.map((f) => f.name),
        dropped,
        // auc, logloss, calibration (and fullAuc, aucDrop): the test split, read only for reporting
        split: 'test',
        auc: mean('model', 'auc'),
        logloss: mean('model', 'logloss'),
        calibration: mean('model', 'calibration'),
        validation: {
          split: 'validation',
          auc: mean('model', 'validationAuc'),
          logloss: mean('model', 'validationLogloss'),
          rows: built.validation.rows,
        },
        seeds,
        perSeed: results,
        ...(params.compareWithFull
          ? {
              fullAuc: mean('full model', 'auc'),
              fullLogloss: mean('full model', 'logloss'),
              aucDrop: mean('full model', 'auc') - mean('model', 'auc'),
            }
          : {}),
        testRows: built.test.rows,
        validationRows: built.validation.rows,
        // the training split; models fit on fitRows of it (the rest is the validation split)
        trainRows: built.train.rows + built.validation.rows,
        fitRows: built.train.rows,
        steps: trained.metrics.steps,
        epochs: trained.metrics.epochs,
        stoppedEarly: trained.metrics.stoppedEarly,
        trainMs: trained.metrics.trainMs,
        samplesKey: built.key,
        samplesCached: built.cached,
        modelKey: trained.key,
        modelDir: trained.dir,
        modelCached: results.every((r) => r.cached),
        // the shared embedding the model started from, and the rows it carried per slot
        ...(trained.init !== undefined ? { init: trained.init } : {}),
        timings,
      },
    };
  }
}
