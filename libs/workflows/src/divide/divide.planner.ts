import type { DataSource } from 'typeorm';
import { InvalidInputError, canSeeLine, type RequestScope } from '@abacus/core';
import { ExperimentEntity, FeatureEntity, type TrialEntity } from '@abacus/data';
import { JobName } from '@abacus/queue';
import type { ExperimentPlan, ExperimentPlanner, PlannedTrial } from '../experiments/experiment-planner';
import type { CreateExperiment } from '../experiments/experiment.schemas';
import { RecipeResolver } from '../model/recipe-resolver';
import { ABLATE_MAX_ROWS, type AblateTrialParams, type TrainTrialParams } from '../trials/train-trial.schema';
import {
  RESOURCES,
  budgetOf,
  type Costs,
  type DividePublishParams,
  type DivideSelectParams,
  type DivideTierParams,
  type Resource,
} from './divide-experiment.schema';
import { DEFAULT_CANDIDATES_PER_REQUEST, ledgerEntry } from './cost-rules';
import { costOf } from './selection';

type DivideInput = Extract<CreateExperiment, { kind: 'divide' }>;

/**
 * divide: the feature set that keeps the most model value under each budget tier, retrained and
 * published as degraded tiers of the model.
 *
 * Flow (a chain): train the full model → ablate (shuffle value of each feature) → select (interactions,
 * then per tier the MILP and the greedy selection) → tier 0 … tier k (each retrained on every seed)
 * → publish (the cost–value frontier; tiers as model versions `tier-<n>`).
 */
export class DividePlanner implements ExperimentPlanner<'divide'> {
  readonly kind = 'divide' as const;

  async plan(input: DivideInput, ds: DataSource, scope: RequestScope): Promise<ExperimentPlan> {
    const spec = input.spec;
    const resolver = new RecipeResolver(ds, scope, input.businessLine);
    const { recipe, sampleSet } = await resolver.base(spec.model, 'spec.model');
    const names = recipe.features.map((f) => f.name);
    if (names.length < 2) throw new InvalidInputError('spec.model.features', 'dividing needs at least 2 features');
    // the cost ledger's figure in force per resource (declared overrides measured)
    const rows = await ds
      .getRepository(FeatureEntity)
      .createQueryBuilder('f')
      .where('f.name IN (:...names)', { names })
      .getMany();
    const cpr = recipe.architecture.candidatesPerRequest ?? DEFAULT_CANDIDATES_PER_REQUEST;
    const costs: Record<string, Costs> = {};
    const costSources: Record<string, Record<Resource, string>> = {};
    names.forEach((n, i) => {
      const f = rows.find((r) => r.name === n && r.businessLine === input.businessLine) ?? rows.find((r) => r.name === n);
      const entry = f ? ledgerEntry(f, cpr) : null;
      if (!entry || entry.noCost) {
        throw new InvalidInputError(
          spec.model.features ? `spec.model.features.${i}` : 'spec.model',
          `feature "${n}" has no cost in the registry: declare its costs (PATCH /api/v1/features/{id}) or measure them (abacus features costs --measure)`,
        );
      }
      costs[n] = {
        storage: entry.storage.value ?? 0,
        communication: entry.communication.value ?? 0,
        compute: entry.compute.value ?? 0,
      };
      costSources[n] = {
        storage: entry.storage.source ?? 'none',
        communication: entry.communication.source ?? 'none',
        compute: entry.compute.source ?? 'none',
      };
    });
    const total = costOf(names, costs);
    if (RESOURCES.every((r) => total[r] === 0))
      throw new InvalidInputError('spec.model', 'every feature costs nothing: there is nothing to divide');

    let subtractExperimentId: string | null = null;
    if (spec.value !== 'ablation') {
      const e = await ds.getRepository(ExperimentEntity).findOneBy({ id: spec.value.subtract });
      if (!e || !canSeeLine(scope, e.businessLine))
        throw new InvalidInputError('spec.value.subtract', `no subtract experiment ${spec.value.subtract}`);
      if (e.kind !== 'subtract' || e.status !== 'succeeded')
        throw new InvalidInputError(
          'spec.value.subtract',
          `experiment ${e.id} is a ${e.status} ${e.kind}, not a succeeded subtract`,
        );
      subtractExperimentId = e.id;
    }

    // tier 0 is the full model; every budget below 1 is a further tier
    const fractions = spec.tiers.map(budgetOf).filter((b) => RESOURCES.some((r) => b[r] < 1));
    const budgets = fractions.map((b) => ({
      storage: b.storage * total.storage,
      communication: b.communication * total.communication,
      compute: b.compute * total.compute,
    }));
    const seeds = Array.from({ length: spec.seeds }, (_, k) => recipe.training.seed + k);
    const trials: PlannedTrial[] = [];
    const add = (t: PlannedTrial) => trials.push(t) - 1;
    const train = add({ kind: 'train', job: JobName.TrainTrial, params: { role: 'base', recipe } satisfies TrainTrialParams });
    const ablate =
      spec.value === 'ablation'
        ? add({
            kind: 'ablate',
            job: JobName.AblateTrial,
            params: {
              modelSeq: train,
              groups: names.map((n) => [n]),
              folds: spec.folds,
              repeats: spec.repeats,
              alpha: spec.alpha,
              seed: spec.seed,
              scorer: 'shuffle_auc',
              // values drive the selection: validation split
              split: 'validation',
              maxRows: ABLATE_MAX_ROWS,
            } satisfies AblateTrialParams,
          })
        : null;
    const select = add({
      kind: 'select',
      job: JobName.DivideSelectTrial,
      params: {
        modelSeq: train,
        ablateSeq: ablate,
        subtractExperimentId,
        budgets,
        costs,
        interactionTop: spec.interactionTop,
        folds: spec.folds,
        repeats: spec.repeats,
        alpha: spec.alpha,
        seed: spec.seed,
      } satisfies DivideSelectParams,
    });
    const tierSeqs: number[] = [];
    for (let t = 0; t <= budgets.length; t++) {
      tierSeqs.push(
        add({
          kind: 'tier',
          job: JobName.DivideTierTrial,
          params: { selectSeq: select, tier: t, recipe, seeds } satisfies DivideTierParams,
        }),
      );
    }
    const publishAs =
      spec.publishAs ??
      (recipe.modelId
        ? ((await ds.query(`SELECT name FROM models WHERE id = $1`, [recipe.modelId])) as { name: string }[])[0].name
        : `${sampleSet.name}-model`);
    const publish = add({
      kind: 'publish',
      job: JobName.DividePublishTrial,
      params: {
        modelSeq: train,
        selectSeq: select,
        tierSeqs,
        publishAs,
        modelId: recipe.modelId,
        recipe,
      } satisfies DividePublishParams,
    });
    // a chain: each step reads the one before
    for (let i = 0; i < publish; i++) trials[i].parent = i + 1;
    return {
      spec: {
        ...spec,
        resolved: {
          sampleSetId: sampleSet.id,
          features: names,
          costs,
          costSources,
          candidatesPerRequest: cpr,
          total,
          tiers: [{ storage: 1, communication: 1, compute: 1 }, ...fractions],
          publishAs,
        },
      },
      trials,
    };
  }

  summarize(_e: ExperimentEntity, trials: TrialEntity[]): Record<string, unknown> {
    return trials.find((t) => t.kind === 'publish')?.metrics ?? {};
  }
}
