import type { DataSource } from 'typeorm';
import { InvalidInputError, canSeeLine, type RequestScope } from '@abacus/core';
import { ExperimentEntity, FeatureEntity, type TrialEntity } from '@abacus/data';
import { JobName } from '@abacus/queue';
import type { ExperimentPlan, ExperimentPlanner, PlannedTrial } from '../experiments/experiment-planner';
import type { CreateExperiment } from '../experiments/experiment.schemas';
import { RecipeResolver } from '../model/recipe-resolver';
import { ABLATE_MAX_ROWS, type AblateTrialParams, type TrainTrialParams } from '../trials/train-trial.schema';
import type { ModelRecipe, ResolvedFeature } from '../model/model-recipe.schema';
import {
  LARGE_TIER,
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
    const noCost = (n: string) =>
      `feature "${n}" has no cost in the registry: declare its costs (PATCH /api/v1/features/{id}) or measure them (abacus features costs --measure)`;
    /** the ledger's figures in force of a registered feature (false: it has none) */
    const takeCosts = (n: string, f: FeatureEntity | undefined): boolean => {
      const entry = f ? ledgerEntry(f, cpr) : null;
      if (!entry || entry.noCost) return false;
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
      return true;
    };
    names.forEach((n, i) => {
      const f = rows.find((r) => r.name === n && r.businessLine === input.businessLine) ?? rows.find((r) => r.name === n);
      if (!takeCosts(n, f))
        throw new InvalidInputError(spec.model.features ? `spec.model.features.${i}` : 'spec.model', noCost(n));
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

    // the large tier: the model's features and a pool of registered features it does not use
    let large: { recipe: ModelRecipe; pool: string[]; skipped: { name: string; reason: string }[]; fractions: Costs } | null =
      null;
    if (spec.large) {
      const inModel = new Set(names);
      const pool: ResolvedFeature[] = [];
      const skipped: { name: string; reason: string }[] = [];
      if (spec.large.pool) {
        const seen = new Set<string>();
        for (const [i, n] of spec.large.pool.entries()) {
          const path = `spec.large.pool.${i}`;
          if (inModel.has(n)) throw new InvalidInputError(path, `"${n}" is a feature of the model already`);
          if (seen.has(n)) throw new InvalidInputError(path, `"${n}" is named twice`);
          seen.add(n);
          const resolved = await resolver.feature(n, sampleSet, path);
          const reg = await resolver.registered(n);
          if (!takeCosts(n, reg ?? undefined)) throw new InvalidInputError(path, noCost(n));
          pool.push(resolved);
        }
      } else {
        const line = await ds.getRepository(FeatureEntity).findBy({ businessLine: input.businessLine });
        const adoptedGain = (f: FeatureEntity) =>
          Math.max(
            -Infinity,
            ...f.provenance.filter((p) => p.verdict === 'adopt' && p.businessLine === input.businessLine).map((p) => p.gain),
          );
        const ordered = line
          .filter((f) => !inModel.has(f.name))
          .sort((a, b) => adoptedGain(b) - adoptedGain(a) || a.name.localeCompare(b.name));
        for (const f of ordered) {
          if (pool.length >= spec.large.maxPool) {
            skipped.push({ name: f.name, reason: `beyond maxPool (${spec.large.maxPool})` });
            continue;
          }
          let resolved: ResolvedFeature;
          try {
            resolved = await resolver.feature(f.name, sampleSet, 'spec.large.pool');
          } catch (e) {
            if (!(e instanceof InvalidInputError)) throw e;
            skipped.push({ name: f.name, reason: e.message.replace(/^spec\.large\.pool: /, '') });
            continue;
          }
          if (!takeCosts(f.name, f)) {
            skipped.push({ name: f.name, reason: 'no cost in the registry' });
            continue;
          }
          pool.push(resolved);
        }
      }
      if (!pool.length) {
        throw new InvalidInputError(
          'spec.large.pool',
          `no registered feature of ${input.businessLine} beyond the model's can join it${
            skipped.length ? ` (${skipped.map((x) => `${x.name}: ${x.reason}`).join('; ')})` : ''
          }: register features for the line, or name them in spec.large.pool`,
        );
      }
      const hidden = spec.large.hidden;
      large = {
        recipe: {
          ...recipe,
          features: [...recipe.features, ...pool],
          architecture: hidden ? { ...recipe.architecture, hidden } : recipe.architecture,
          modelId: null,
        },
        pool: pool.map((f) => f.name),
        skipped,
        fractions: budgetOf(spec.large.budget),
      };
    }
    const trials: PlannedTrial[] = [];
    const add = (t: PlannedTrial) => trials.push(t) - 1;
    const train = add({ kind: 'train', job: JobName.TrainTrial, params: { role: 'base', recipe } satisfies TrainTrialParams });
    const ablateParams = (modelSeq: number, groups: string[]): AblateTrialParams => ({
      modelSeq,
      groups: groups.map((n) => [n]),
      folds: spec.folds,
      repeats: spec.repeats,
      alpha: spec.alpha,
      seed: spec.seed,
      scorer: 'shuffle_auc',
      // values drive the selection: validation split
      split: 'validation',
      maxRows: ABLATE_MAX_ROWS,
    });
    const ablate =
      spec.value === 'ablation' ? add({ kind: 'ablate', job: JobName.AblateTrial, params: ablateParams(train, names) }) : null;
    let largeSelect: DivideSelectParams['large'] = null;
    if (large) {
      const wideNames = large.recipe.features.map((f) => f.name);
      const wide = add({
        kind: 'train',
        job: JobName.TrainTrial,
        params: { role: 'base', recipe: large.recipe } satisfies TrainTrialParams,
      });
      const wideAblate = add({ kind: 'ablate', job: JobName.AblateTrial, params: ablateParams(wide, wideNames) });
      largeSelect = {
        budget: {
          storage: large.fractions.storage * total.storage,
          communication: large.fractions.communication * total.communication,
          compute: large.fractions.compute * total.compute,
        },
        fractions: large.fractions,
        features: wideNames,
        pool: large.pool,
        ablateSeq: wideAblate,
      };
    }
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
        large: largeSelect,
      } satisfies DivideSelectParams,
    });
    const tierSeqs: number[] = [];
    if (large) {
      tierSeqs.push(
        add({
          kind: 'tier',
          job: JobName.DivideTierTrial,
          params: { selectSeq: select, tier: LARGE_TIER, recipe: large.recipe, seeds } satisfies DivideTierParams,
        }),
      );
    }
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
        largeRecipe: large?.recipe ?? null,
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
          ...(large ? { large: { fractions: large.fractions, pool: large.pool, skipped: large.skipped } } : {}),
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
