import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import { FeatureResultEntity } from '@abacus/data';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { foldIndices, subsetDataset } from '../model/dataset-subset';
import { foldInterval, type FoldEstimate } from '../stats/fold-interval';
import { groupDrops } from '../trials/group-ablation';
import { runTrial } from '../trials/trial-runner';
import { trainTrialParamsSchema } from '../trials/train-trial.schema';
import { trialBySeq, type WorkflowContext } from '../trials/workflow-context';
import { featureCosts } from './feature-costs';
import { pruneTrialParamsSchema } from './subtract-experiment.schema';

export interface RankedFeature {
  feature: string;
  ivRank: number | null;
  shuffleRank: number | null;
  /** mean of the available ranks; 1 = least important */
  combinedRank: number;
}

/** Rank 1 = least important; ties broken by name so the order is reproducible. */
export function rankFeatures(features: string[], iv: Map<string, number>, shuffle: Map<string, number>): RankedFeature[] {
  const rankBy = (scores: Map<string, number>) => {
    const present = features.filter((f) => scores.has(f)).sort((a, b) => scores.get(a)! - scores.get(b)! || a.localeCompare(b));
    return new Map(present.map((f, i) => [f, i + 1]));
  };
  const ri = rankBy(iv);
  const rs = rankBy(shuffle);
  return features
    .map((f) => {
      const ranks = [ri.get(f), rs.get(f)].filter((r): r is number => r !== undefined);
      return {
        feature: f,
        ivRank: ri.get(f) ?? null,
        shuffleRank: rs.get(f) ?? null,
        combinedRank: ranks.length ? ranks.reduce((a, b) => a + b, 0) / ranks.length : features.length,
      };
    })
    .sort((a, b) => a.combinedRank - b.combinedRank || a.feature.localeCompare(b.feature));
}

/**
 * The pruning rounds: the k-th candidate set is the k·batch lowest-ranked features; all are
 * verified together on the trained model (one permutation of the whole group per repeat, per test
 * fold). Rounds are accepted while the estimated AUC drop stays within maxDrop; past the first
 * rejected round, the rejected batch's features are tried one at a time (back-off), lowest first.
 */
export class PruneTrialHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.PruneTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, async ({ trial, experiment, checkpoint, progress }) => {
      const p = pruneTrialParamsSchema.parse(trial.params);
      const modelTrial = await trialBySeq(this.w.ds, experiment.id, p.modelSeq);
      const mp = trainTrialParamsSchema.parse(modelTrial.params);
      const names = modelTrial.metrics!.features as string[];
      const features = names.map((n) => mp.recipe.features.find((f) => f.name === n)!) as ResolvedFeature[];

      const iv = new Map<string, number>();
      if (p.ivSeq !== null) {
        await trialBySeq(this.w.ds, experiment.id, p.ivSeq);
        const rows = await this.w.ds.getRepository(FeatureResultEntity).findBy({ experimentId: experiment.id, scorer: 'iv' });
        for (const r of rows) if (names.includes(r.featureName)) iv.set(r.featureName, r.value);
      }
      const shuffle = new Map<string, number>();
      if (p.shuffleSeq !== null) {
        const sh = await trialBySeq(this.w.ds, experiment.id, p.shuffleSeq);
        for (const g of sh.metrics!.groups as { inputs: string[]; mean: number }[]) shuffle.set(g.inputs[0], g.mean);
      }
      const ranking = rankFeatures(names, iv, shuffle);
      const order = ranking.map((r) => r.feature);

      await progress(0.05, 'loading samples and model');
      const recipe = { ...mp.recipe, features };
      const built = await this.w.samples.get(recipe, features);
      const trained = await this.w.trainer.trainOrReuse(built, recipe.architecture, recipe.training);
      const folds = foldIndices(built.test.rows, p.folds, p.seed + 7).map((idx) => subsetDataset(built.test, idx));
      checkpoint();

      const estimate = async (groups: string[][], label: string): Promise<FoldEstimate[]> => {
        const d = await groupDrops(trained.model, folds, groups, p.repeats, p.seed + 7, async () => checkpoint());
        await progress(0.5, label);
        return d.auc.map((xs) => foldInterval(xs, p.alpha));
      };

      const rounds = Math.floor((names.length - 1) / p.batchSize);
      const sets = Array.from({ length: rounds }, (_, k) => order.slice(0, (k + 1) * p.batchSize));
      const curve: { round: number; removed: number; added: string[]; drop: number; ciLow: number; ciHigh: number; accepted: boolean }[] = [];
      let accepted: string[] = [];
      let acceptedEstimate: FoldEstimate = { mean: 0, std: 0, ciLow: 0, ciHigh: 0, folds: p.folds };
      let failedBatch: string[] = [];
      if (sets.length) {
        const est = await estimate(sets, `verifying ${sets.length} nested batch(es)`);
        for (let k = 0; k < sets.length; k++) {
          const ok = est[k].mean <= p.maxDrop;
          curve.push({
            round: k + 1,
            removed: sets[k].length,
            added: sets[k].slice(k * p.batchSize),
            drop: est[k].mean,
            ciLow: est[k].ciLow,
            ciHigh: est[k].ciHigh,
            accepted: ok,
          });
          if (!ok) {
            failedBatch = sets[k].slice(k * p.batchSize);
            break;
          }
          accepted = sets[k];
          acceptedEstimate = est[k];
        }
      }
      // back off: the rejected batch, one feature at a time (never all but one feature)
      for (const f of failedBatch) {
        if (accepted.length + 1 >= names.length) break;
        const [est] = await estimate([[...accepted, f]], `back-off: trying ${f}`);
        const ok = est.mean <= p.maxDrop;
        curve.push({
          round: curve.length + 1,
          removed: accepted.length + 1,
          added: [f],
          drop: est.mean,
          ciLow: est.ciLow,
          ciHigh: est.ciHigh,
          accepted: ok,
        });
        if (ok) {
          accepted = [...accepted, f];
          acceptedEstimate = est;
        }
      }
      checkpoint();
      await progress(0.95, 'writing the ranking');
      const costs = await featureCosts(this.w.ds, experiment.businessLine, names);
      await this.w.ds
        .createQueryBuilder()
        .insert()
        .into(FeatureResultEntity)
        .values(
          ranking.map((r) => ({
            experimentId: experiment.id,
            trialId: trial.id,
            businessLine: experiment.businessLine,
            featureName: r.feature,
            scorer: 'prune_rank',
            value: r.combinedRank,
            ciLow: null,
            ciHigh: null,
            rank: order.indexOf(r.feature) + 1,
            details: { ivRank: r.ivRank, shuffleRank: r.shuffleRank, removable: accepted.includes(r.feature) },
          })) as never[],
        )
        .orUpdate(['trial_id', 'value', 'ci_low', 'ci_high', 'rank', 'details'], ['experiment_id', 'feature_name', 'scorer'])
        .execute();
      return {
        backend: trained.backend,
        metrics: {
          ranking,
          curve,
          removable: accepted,
          kept: names.filter((n) => !accepted.includes(n)),
          estimatedDrop: acceptedEstimate,
          baseAuc: trained.metrics.auc,
          maxDrop: p.maxDrop,
          batchSize: p.batchSize,
          costs,
        },
      };
    });
  }
}
