import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import { FeatureResultEntity } from '@abacus/data';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { materialize, rowRange } from '@abacus/runtime';
import { foldOrder, sampleRows } from '../model/dataset-subset';
import { foldInterval } from '../stats/fold-interval';
import { runTrial, type TrialScope } from './trial-runner';
import { ablateTrialParamsSchema, trainTrialParamsSchema } from './train-trial.schema';
import { trialBySeq, withDevice, type WorkflowContext } from './workflow-context';
import { groupDrops } from './group-ablation';
import { recipeInit } from '../embeddings/recipe-init';

/**
 * Permutation importance of input groups on a trained model. The chosen split (validation when a
 * decision reads the result, test when it is only reported) is cut into folds;
 * each fold is ablated (`repeats` seeded permutations inside the lookup), and the spread of the
 * per-fold AUC drops gives the interval, so it covers test-set sampling, not only the permutations.
 */
export class AblateTrialHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.AblateTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, (scope) => withDevice(this.w, (device) => this.run(scope, device)));
  }

  private async run({ trial, experiment, checkpoint, progress }: TrialScope, device: number | undefined) {
    const params = ablateTrialParamsSchema.parse(trial.params);
    const modelTrial = await trialBySeq(this.w.ds, experiment.id, params.modelSeq);
    const mp = trainTrialParamsSchema.parse(modelTrial.params);
    const features = (modelTrial.metrics!.features as string[]).map((n) =>
      mp.recipe.features.find((f) => f.name === n)!,
    ) as ResolvedFeature[];
    const recipe = { ...mp.recipe, features };
    await progress(0.05, 'loading samples and model');
    const built = await this.w.samples.get(recipe, features);
    const trained = await this.w.trainer.trainOrReuse(
      built,
      recipe.architecture,
      recipe.training,
      { device },
      recipeInit(this.w.dataDir, recipe, built),
    );
    checkpoint();
    const t0 = Date.now();
    const split = params.split === 'validation' ? built.validation : built.test;
    // the split (a view of the built shards; a seeded sample of maxRows of a larger one) copied once,
    // fold after fold: each fold a range of the copy
    const laid = foldOrder(
      split.rows,
      params.folds,
      params.seed,
      split.rows > params.maxRows ? sampleRows(split.rows, params.maxRows, params.seed + 31) : undefined,
    );
    const rows = await materialize(split, laid.order);
    const folds = laid.bounds.slice(1).map((hi, k) => rowRange(rows, laid.bounds[k]!, hi));
    const drops = await groupDrops(trained.model, folds, params.groups, params.repeats, params.seed, async (k) => {
      checkpoint();
      await progress(0.1 + (0.8 * k) / folds.length, `ablating ${params.groups.length} group(s): fold ${k + 1}/${folds.length}`);
    });
    const groups = params.groups.map((inputs, g) => ({
      inputs,
      ...foldInterval(drops.auc[g], params.alpha),
      loglossIncrease: mean(drops.logloss[g]),
    }));
    const ablateMs = Date.now() - t0;
    const t1 = Date.now();
    const single = groups.filter((g) => g.inputs.length === 1);
    if (single.length) {
      await this.w.ds
        .createQueryBuilder()
        .insert()
        .into(FeatureResultEntity)
        .values(
          single.map((g) => ({
            experimentId: experiment.id,
            trialId: trial.id,
            businessLine: experiment.businessLine,
            featureName: g.inputs[0],
            scorer: params.scorer,
            value: g.mean,
            ciLow: g.ciLow,
            ciHigh: g.ciHigh,
            rank: null,
            details: {
              std: g.std,
              folds: g.folds,
              repeats: params.repeats,
              loglossIncrease: g.loglossIncrease,
              alpha: params.alpha,
              split: params.split,
            },
          })) as never[],
        )
        .orUpdate(['trial_id', 'value', 'ci_low', 'ci_high', 'rank', 'details'], ['experiment_id', 'feature_name', 'scorer'])
        .execute();
    }
    return {
      backend: trained.backend,
      metrics: {
        modelSeq: params.modelSeq,
        // the split the folds (and baseAuc) come from
        split: params.split,
        baseAuc: params.split === 'validation' ? trained.metrics.validation.auc : trained.metrics.auc,
        folds: params.folds,
        repeats: params.repeats,
        groups,
        timings: { ablateMs, writeMs: Date.now() - t1 },
      },
    };
  }
}

function mean(xs: number[]): number {
  return xs.reduce((s, x) => s + x, 0) / xs.length;
}
