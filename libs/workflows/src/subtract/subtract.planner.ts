import type { DataSource } from 'typeorm';
import { InvalidInputError, type RequestScope } from '@abacus/core';
import type { ExperimentEntity, FeatureResultEntity, TrialEntity } from '@abacus/data';
import { JobName } from '@abacus/queue';
import type { ExperimentPlan, ExperimentPlanner, PlannedTrial } from '../experiments/experiment-planner';
import type { CreateExperiment } from '../experiments/experiment.schemas';
import { RecipeResolver } from '../model/recipe-resolver';
import { binningOptionsSchema, type ScoreTrialParams } from '../score/score-experiment.schema';
import type { TrainTrialParams } from '../trials/train-trial.schema';
import type { AblateTrialParams } from '../trials/train-trial.schema';
import { sumCosts, type KnownCosts } from './feature-costs';
import type { PruneTrialParams } from './subtract-experiment.schema';

type SubtractInput = Extract<CreateExperiment, { kind: 'subtract' }>;

/**
 * subtract: train (or reuse) the model; score every feature (IV on the sample set, shuffle importance
 * on the trained model); remove the lowest-ranked features in batches, each verified by permuting
 * the whole removed group on the trained model; retrain without them to confirm.
 *
 * Flow (a trial runs after the ones below it):  finalize ← confirm ← prune ← { shuffle ← train, iv }
 */
export class SubtractPlanner implements ExperimentPlanner<'subtract'> {
  readonly kind = 'subtract' as const;

  async plan(input: SubtractInput, ds: DataSource, scope: RequestScope): Promise<ExperimentPlan> {
    const spec = input.spec;
    const resolver = new RecipeResolver(ds, scope, input.businessLine);
    const { recipe, sampleSet } = await resolver.base(spec.model, 'spec.model');
    const n = recipe.features.length;
    if (n < 2) throw new InvalidInputError('spec.model.features', 'pruning needs at least 2 features');
    const batchSize = spec.batchSize ?? Math.max(1, Math.round(spec.batchFraction * n));
    if (batchSize >= n) throw new InvalidInputError('spec.batchSize', `must be smaller than the number of features (${n})`);
    const trials: PlannedTrial[] = [];
    const add = (t: PlannedTrial) => trials.push(t) - 1;
    const useShuffle = spec.scorers.includes('shuffle');
    const useIv = spec.scorers.includes('iv');
    // indices are fixed up below once the parents exist
    const train = add({ kind: 'train', job: JobName.TrainTrial, params: { role: 'base', recipe } satisfies TrainTrialParams });
    const shuffle = useShuffle
      ? add({
          kind: 'ablate',
          job: JobName.AblateTrial,
          params: {
            modelSeq: train,
            groups: recipe.features.map((f) => [f.name]),
            folds: spec.folds,
            repeats: spec.repeats,
            alpha: spec.alpha,
            seed: spec.seed,
            scorer: 'shuffle_auc',
            // the ranking is a decision: it reads the validation split (the rows the prune decides on)
            split: 'validation',
            maxRows: spec.decisionRows,
          } satisfies AblateTrialParams,
        })
      : null;
    const columns = recipe.features.filter((f) => f.source.kind === 'column').map((f) => f.name);
    const iv =
      useIv && columns.length
        ? add({
            kind: 'score',
            job: JobName.ScoreTrial,
            params: {
              sampleSetId: sampleSet.id,
              features: columns,
              psiSplitTime: null,
              binning: binningOptionsSchema.parse({}),
              ...(recipe.positive ? { positive: recipe.positive } : {}),
            } satisfies ScoreTrialParams,
          })
        : null;
    const confirmSeeds = Array.from({ length: Math.max(1, spec.retrainSeeds) }, (_, k) => recipe.training.seed + 1000 + k);
    const prune = add({
      kind: 'prune',
      job: JobName.PruneTrial,
      params: {
        modelSeq: train,
        shuffleSeq: shuffle,
        ivSeq: iv,
        batchSize,
        maxDrop: spec.maxDrop,
        repeats: spec.repeats,
        folds: spec.folds,
        alpha: spec.alpha,
        seed: spec.seed,
        redundancyThreshold: spec.redundancyThreshold,
        retrainSeeds: Array.from({ length: spec.retrainSeeds }, (_, k) => recipe.training.seed + k),
        retrainScanBelow: spec.retrainScanBelow,
        retrain: spec.retrain,
        warmEpochs: spec.warmEpochs,
        warmMaxSteps: spec.warmMaxSteps,
        warmSeeds: spec.warmSeeds,
        decisionRows: spec.decisionRows,
        // the seeds the confirm step fits first (below): the prune may fit the whole model on them ahead
        confirmSeeds: spec.confirm ? confirmSeeds.slice(0, Math.min(spec.confirmMinSeeds, confirmSeeds.length)) : [],
      } satisfies PruneTrialParams,
    });
    const confirm = spec.confirm
      ? add({
          kind: 'train',
          job: JobName.TrainTrial,
          params: {
            role: 'pruned',
            recipe,
            dropRemovableOf: prune,
            // fresh seeds: the confirmation is independent of the trainings the pruning decided on
            seeds: confirmSeeds,
            compareWithFull: true,
            // fewer seeds where the validation split already decides the drop against maxDrop
            ...(spec.confirmMinSeeds < spec.retrainSeeds
              ? { stopWhenDecided: { maxDrop: spec.maxDrop, minSeeds: spec.confirmMinSeeds, alpha: 0.01 } }
              : {}),
          } satisfies TrainTrialParams,
        })
      : null;
    trials[train].parent = shuffle ?? prune;
    if (shuffle !== null) trials[shuffle].parent = prune;
    if (iv !== null) trials[iv].parent = prune;
    if (confirm !== null) trials[prune].parent = confirm;
    return {
      spec: { ...spec, resolved: { sampleSetId: sampleSet.id, features: recipe.features.map((f) => f.name), batchSize } },
      trials,
    };
  }

  summarize(e: ExperimentEntity, trials: TrialEntity[], results: FeatureResultEntity[]): Record<string, unknown> {
    const byKind = (kind: string, role?: string) =>
      trials.find((t) => t.kind === kind && (role === undefined || (t.metrics as { role?: string } | null)?.role === role));
    const base = byKind('train', 'base')!.metrics as Record<string, number>;
    const prune = byKind('prune')!.metrics as {
      removable: string[];
      kept: string[];
      estimatedDrop: { mean: number; ciLow: number; ciHigh: number };
      retrain: { fullAuc: number; prunedAuc: number; bestAuc: number; drop: number; seeds: number[] } | null;
      redundant: { feature: string; partner: string; r: number }[];
      curve: unknown[];
      ranking: { feature: string; combinedRank: number; ivRank: number | null; shuffleRank: number | null }[];
      costs: Record<string, KnownCosts>;
    };
    const pruned = byKind('train', 'pruned')?.metrics as
      (Record<string, number> & { seeds: number[]; seedsPlanned?: number[]; stopWhenDecided?: unknown }) | undefined;
    const maxDrop = (e.spec as { maxDrop: number }).maxDrop;
    const score = (name: string, scorer: string) => results.find((r) => r.featureName === name && r.scorer === scorer);
    return {
      features: prune.ranking.length,
      removable: prune.removable,
      removedShare: prune.removable.length / prune.ranking.length,
      kept: prune.kept,
      // decisions (curve, estimate, retraining checks, shuffle scores) read the validation split; the
      // full model's metrics and the confirmation are measured on the test split, once
      splits: { decisions: 'validation', reported: 'test' },
      full: { split: 'test', auc: base.auc, logloss: base.logloss },
      estimatedDrop: { split: 'validation', ...prune.estimatedDrop },
      retrainCheck: prune.retrain ? { split: 'validation', ...prune.retrain } : null,
      redundant: prune.redundant,
      confirmed: pruned
        ? {
            split: 'test',
            auc: pruned.auc,
            logloss: pruned.logloss,
            fullAuc: pruned.fullAuc,
            aucDrop: pruned.aucDrop,
            withinLimit: pruned.aucDrop <= maxDrop,
            seeds: pruned.seeds,
            seedsPlanned: pruned.seedsPlanned ?? pruned.seeds,
            // the validation-split rule that ended the seeds early (when asked for)
            stoppedWhenDecided: pruned.stopWhenDecided ?? null,
          }
        : null,
      maxDrop,
      curve: prune.curve,
      perFeature: prune.ranking.map((r) => {
        const sh = score(r.feature, 'shuffle_auc');
        return {
          feature: r.feature,
          combinedRank: r.combinedRank,
          iv: score(r.feature, 'iv')?.value ?? null,
          shuffleDrop: sh?.value ?? null,
          shuffleCi: sh ? [sh.ciLow, sh.ciHigh] : null,
          shuffleSplit: (sh?.details as { split?: string } | undefined)?.split ?? null,
          removable: prune.removable.includes(r.feature),
        };
      }),
      resourcesSaved: sumCosts(prune.removable.map((f) => prune.costs[f]).filter((c) => !!c)),
      featuresWithoutCosts: prune.removable.filter((f) => !prune.costs[f]),
    };
  }
}
