import type { DataSource } from 'typeorm';
import { InvalidInputError, type RequestScope } from '@abacus/core';
import type { ExperimentEntity, FeatureResultEntity, TrialEntity } from '@abacus/data';
import { JobName } from '@abacus/queue';
import type { ExperimentPlan, ExperimentPlanner, PlannedTrial } from '../experiments/experiment-planner';
import type { CreateExperiment } from '../experiments/experiment.schemas';
import { RecipeResolver } from '../model/recipe-resolver';
import { ABLATE_MAX_ROWS, type AblateTrialParams, type TrainTrialParams } from '../trials/train-trial.schema';
import type { CompareTrialParams } from '../add/add-experiment.schema';
import type { DiscoverTrialParams } from './discover-experiment.schema';

type DiscoverInput = Extract<CreateExperiment, { kind: 'discover' }>;

/** The placeholder a trial of the verified comparison holds until the screen names the candidates. */
const PENDING = '(chosen by the screen)';

/**
 * discover: train the base model; enumerate candidate expressions over its sample set and screen
 * them against it (the discover trial); the best `topK` then go through add's verified comparison
 * (augmented model, validation and test shuffles, leave-one-in fits on several seeds, verdicts with
 * intervals and minGain), whose trials the screen fills in; adopted expressions are registered.
 *
 * Flow:  finalize ← compare ← test shuffle ← validation shuffle ← augmented ← discover ← base
 */
export class DiscoverPlanner implements ExperimentPlanner<'discover'> {
  readonly kind = 'discover' as const;

  async plan(input: DiscoverInput, ds: DataSource, scope: RequestScope): Promise<ExperimentPlan> {
    const spec = input.spec;
    const resolver = new RecipeResolver(ds, scope, input.businessLine);
    const { recipe, sampleSet } = await resolver.base(spec.base, 'spec.base');
    const families = spec.families;
    const timed = new Set(['count', 'rate', 'mean', 'sum', 'distinct', 'since', 'freq']);
    if (!sampleSet.timeColumn && families.every((f) => timed.has(f)))
      throw new InvalidInputError(
        'spec.families',
        `sample set ${sampleSet.name} has no time column: ${families.join(', ')} aggregate earlier rows, which needs one`,
      );
    const trials: PlannedTrial[] = [];
    const add = (t: PlannedTrial) => trials.push(t) - 1;
    const base = add({ kind: 'train', job: JobName.TrainTrial, params: { role: 'base', recipe } satisfies TrainTrialParams });
    const discover = add({ kind: 'discover', job: JobName.DiscoverTrial, params: {} });
    const aug = add({ kind: 'train', job: JobName.TrainTrial, params: { role: 'augmented', recipe } satisfies TrainTrialParams });
    const ablation = (split: 'validation' | 'test', scorer: string) =>
      add({
        kind: 'ablate',
        job: JobName.AblateTrial,
        params: {
          modelSeq: aug,
          groups: [[PENDING]],
          folds: spec.folds,
          repeats: spec.repeats,
          alpha: spec.alpha,
          seed: spec.seed,
          scorer,
          split,
          maxRows: ABLATE_MAX_ROWS,
        } satisfies AblateTrialParams,
      });
    const screen = ablation('validation', 'add_screen');
    const shuffle = ablation('test', 'add_contribution');
    const compare = add({
      kind: 'compare',
      job: JobName.CompareTrial,
      params: {
        baseSeq: base,
        augmentedSeq: aug,
        screenSeq: screen,
        ablateSeq: shuffle,
        leaveOneInAll: false,
        seeds: Array.from({ length: spec.seeds }, (_, k) => recipe.training.seed + k),
        candidates: [PENDING],
        alpha: spec.alpha,
        candidateAlpha: spec.alpha,
        bootstrap: spec.bootstrap,
        minGain: spec.minGain,
        notify: spec.notify,
        seed: spec.seed,
      } satisfies CompareTrialParams,
    });
    trials[discover].params = {
      baseSeq: base,
      augmentedSeq: aug,
      screenSeq: screen,
      ablateSeq: shuffle,
      compareSeq: compare,
      families,
      windows: spec.windows,
      maxCandidates: spec.maxCandidates,
      screenRows: spec.screenRows,
      topK: spec.topK,
      alpha: spec.alpha,
      seed: spec.seed,
    } satisfies DiscoverTrialParams;
    if (!spec.register) (trials[compare].params as CompareTrialParams).register = undefined;
    trials[base].parent = discover;
    trials[discover].parent = aug;
    trials[aug].parent = screen;
    trials[screen].parent = shuffle;
    trials[shuffle].parent = compare;
    return {
      spec: { ...spec, families, resolved: { sampleSetId: sampleSet.id, base: recipe.features.map((f) => f.name) } },
      trials,
    };
  }

  summarize(e: ExperimentEntity, trials: TrialEntity[], _results: FeatureResultEntity[]): Record<string, unknown> {
    const screen = trials.find((t) => t.kind === 'discover')?.metrics ?? {};
    const compare = trials.find((t) => t.kind === 'compare')?.metrics ?? {};
    const verdicts = (compare as { candidates?: { feature: string; verdict: string; gain: unknown; leaveOneIn?: unknown }[] }).candidates ?? [];
    const chosen = ((screen as { chosen?: { name: string; text: string; family: string; gain: number }[] }).chosen ?? []).map((c) => {
      const v = verdicts.find((x) => x.feature === c.name);
      return { ...c, screenGain: c.gain, verdict: v?.verdict ?? null, gain: v?.gain ?? null, leaveOneIn: v?.leaveOneIn ?? null };
    });
    const spec = e.spec as { register?: boolean };
    return {
      candidates: (screen as { candidates?: number }).candidates ?? 0,
      families: (screen as { families?: unknown }).families ?? {},
      screenRows: (screen as { screenRows?: number }).screenRows ?? 0,
      chosen,
      adopted: chosen.filter((c) => c.verdict === 'adopt').map((c) => c.name),
      registered: spec.register === false ? [] : ((compare as { registered?: string[] }).registered ?? []),
      /** the registered expressions' costs: how many were measured (or why none could be) */
      costs: (compare as { costs?: unknown }).costs ?? null,
      skipped: (compare as { skipped?: string }).skipped ?? null,
      verification: compare,
    };
  }
}
