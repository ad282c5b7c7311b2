import type { DataSource } from 'typeorm';
import { InvalidInputError, canSeeLine, type RequestScope } from '@abacus/core';
import { FeatureEntity, type ExperimentEntity, type TrialEntity } from '@abacus/data';
import { JobName } from '@abacus/queue';
import type { ExperimentPlan, ExperimentPlanner, PlannedTrial } from '../experiments/experiment-planner';
import type { CreateExperiment } from '../experiments/experiment.schemas';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { RecipeResolver } from '../model/recipe-resolver';
import { ABLATE_MAX_ROWS, type AblateTrialParams, type TrainTrialParams } from '../trials/train-trial.schema';
import type { CompareTrialParams } from './add-experiment.schema';

type AddInput = Extract<CreateExperiment, { kind: 'add' }>;

/**
 * add: train the base model and the base + all candidates model on the same split; screen each
 * candidate by shuffling it in the augmented model on the validation split; the compare step retrains
 * base + candidate on several seeds (paired with the base model's) for every candidate the screen does
 * not reject and decides on that validation evidence; the gains it reports are measured on the test split.
 *
 * Flow:  finalize ← compare ← { base, test shuffle ← validation shuffle ← augmented }
 */
export class AddPlanner implements ExperimentPlanner<'add'> {
  readonly kind = 'add' as const;

  async plan(input: AddInput, ds: DataSource, scope: RequestScope): Promise<ExperimentPlan> {
    const spec = input.spec;
    const resolver = new RecipeResolver(ds, scope, input.businessLine);
    const { recipe, sampleSet } = await resolver.base(spec.base, 'spec.base');
    const baseNames = new Set(recipe.features.map((f) => f.name));
    let names: string[];
    let auto: { feature: string; from: string; gain: number }[] = [];
    if (spec.candidates === 'auto') {
      auto = await autoCandidates(ds, input.businessLine, scope, baseNames);
      names = [];
      for (const c of auto) {
        // only what this sample set can provide (as a column, or joined by a key it has)
        const ok = await resolver.feature(c.feature, sampleSet, 'spec.candidates').then(
          () => true,
          () => false,
        );
        if (ok && !names.includes(c.feature)) names.push(c.feature);
      }
      if (!names.length) {
        throw new InvalidInputError(
          'spec.candidates',
          `auto found no feature measured positive in another business line that ${sampleSet.name} can provide`,
        );
      }
    } else {
      names = spec.candidates;
      if (new Set(names).size !== names.length) throw new InvalidInputError('spec.candidates', 'duplicate candidates');
      names.forEach((n, i) => {
        if (baseNames.has(n))
          throw new InvalidInputError(`spec.candidates.${i}`, `"${n}" is already a feature of the base model`);
      });
    }
    const candidates: ResolvedFeature[] = [];
    for (let i = 0; i < names.length; i++) candidates.push(await resolver.feature(names[i], sampleSet, `spec.candidates.${i}`));
    const augmented = { ...recipe, features: [...recipe.features, ...candidates] };

    const trials: PlannedTrial[] = [];
    const add = (t: PlannedTrial) => trials.push(t) - 1;
    const base = add({ kind: 'train', job: JobName.TrainTrial, params: { role: 'base', recipe } satisfies TrainTrialParams });
    const aug = add({
      kind: 'train',
      job: JobName.TrainTrial,
      params: { role: 'augmented', recipe: augmented } satisfies TrainTrialParams,
    });
    const ablation = (split: 'validation' | 'test', scorer: string) =>
      add({
        kind: 'ablate',
        job: JobName.AblateTrial,
        params: {
          modelSeq: aug,
          groups: candidates.map((c) => [c.name]),
          folds: spec.folds,
          repeats: spec.repeats,
          alpha: spec.alpha / candidates.length,
          seed: spec.seed,
          scorer,
          split,
          maxRows: ABLATE_MAX_ROWS,
        } satisfies AblateTrialParams,
      });
    // the screen decides which candidates get the leave-one-in check; the test one is only reported
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
        leaveOneInAll: spec.leaveOneIn,
        seeds: Array.from({ length: spec.seeds }, (_, k) => recipe.training.seed + k),
        candidates: candidates.map((c) => c.name),
        alpha: spec.alpha,
        candidateAlpha: spec.alpha / candidates.length,
        bootstrap: spec.bootstrap,
        minGain: spec.minGain,
        notify: spec.notify,
        seed: spec.seed,
      } satisfies CompareTrialParams,
    });
    trials[base].parent = compare;
    // the augmented model feeds both ablations; a trial has one parent, so they run one after the other
    trials[aug].parent = screen;
    trials[screen].parent = shuffle;
    trials[shuffle].parent = compare;
    return {
      spec: {
        ...spec,
        resolved: {
          sampleSetId: sampleSet.id,
          base: recipe.features.map((f) => f.name),
          candidates: candidates.map((c) => c.name),
          auto,
        },
      },
      trials,
    };
  }

  summarize(_e: ExperimentEntity, trials: TrialEntity[]): Record<string, unknown> {
    const compare = trials.find((t) => t.kind === 'compare')!;
    return compare.metrics ?? {};
  }
}

/** Features registered in other lines whose latest measurement there showed a significant gain. */
async function autoCandidates(
  ds: DataSource,
  line: string,
  scope: RequestScope,
  exclude: Set<string>,
): Promise<{ feature: string; from: string; gain: number }[]> {
  const rows = await ds.getRepository(FeatureEntity).find({ order: { name: 'ASC' } });
  const out: { feature: string; from: string; gain: number }[] = [];
  for (const f of rows) {
    if (exclude.has(f.name) || !canSeeLine(scope, f.businessLine)) continue;
    const positive = f.provenance
      .filter((p) => p.businessLine !== line)
      .sort((a, b) => b.measuredAt.localeCompare(a.measuredAt))
      .find((p) => p.gain > 0 && (p.ciLow ?? 0) > 0);
    if (positive) out.push({ feature: f.name, from: positive.businessLine, gain: positive.gain });
  }
  return out;
}
