import { FeatureResultEntity, ModelEntity, type ModelCosts } from '@abacus/data';
import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import { recipeInit } from '../embeddings/recipe-init';
import { materialize } from '@abacus/runtime';
import { foldIndices } from '../model/dataset-subset';
import type { ResolvedFeature } from '../model/model-recipe.schema';
import { foldInterval } from '../stats/fold-interval';
import { groupDrops } from '../trials/group-ablation';
import { runTrial } from '../trials/trial-runner';
import { trainTrialParamsSchema } from '../trials/train-trial.schema';
import { trialBySeq, withDevice, type WorkflowContext } from '../trials/workflow-context';
import { onDevices } from '../model/device-pool';
import {
  LARGE_TIER,
  RESOURCES,
  type Costs,
  divideSelectParamsSchema,
  divideTierParamsSchema,
  dividePublishParamsSchema,
} from './divide-experiment.schema';
import { costOf, greedySelect, interactionGroups, solveMilp } from './selection';

interface Picked {
  selected: string[];
  value: number;
  cost: Costs;
}

export interface TierSelection {
  tier: number;
  /** absolute budget per resource (tier 0: the full model's cost) */
  budget: Costs;
  fractions: Costs;
  milp: Picked & { status: string; gap: number };
  greedy: Picked;
}

interface TrainedSet {
  features: string[];
  auc: number;
  logloss: number;
  perSeed: { seed: number; auc: number; logloss: number; modelDir: string }[];
  cost: Costs;
}

const fractionsOf = (c: Costs, total: Costs): Costs =>
  Object.fromEntries(RESOURCES.map((r) => [r, total[r] > 0 ? c[r] / total[r] : 0])) as Costs;

/** divide's selection: feature values, interacting pairs, and per tier the MILP and the greedy choice. */
export class DivideSelectHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.DivideSelectTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, (scope) =>
      withDevice(this.w, async (device) => {
        const { trial, experiment, checkpoint, progress } = scope;
        const p = divideSelectParamsSchema.parse(trial.params);
        const modelTrial = await trialBySeq(this.w.ds, experiment.id, p.modelSeq);
        const recipe = trainTrialParamsSchema.parse(modelTrial.params).recipe;
        const features = recipe.features.map((f) => f.name);
        // value of each feature: its shuffle AUC drop (mean over validation folds) with the fold interval
        const values: Record<string, { mean: number; ciLow: number; ciHigh: number }> = {};
        if (p.ablateSeq !== null) {
          const ab = await trialBySeq(this.w.ds, experiment.id, p.ablateSeq);
          for (const g of ab.metrics!.groups as { inputs: string[]; mean: number; ciLow: number; ciHigh: number }[]) {
            if (g.inputs.length === 1) values[g.inputs[0]] = { mean: g.mean, ciLow: g.ciLow, ciHigh: g.ciHigh };
          }
        } else {
          const rows = await this.w.ds
            .getRepository(FeatureResultEntity)
            .findBy({ experimentId: p.subtractExperimentId!, scorer: 'shuffle_auc' });
          for (const r of rows) values[r.featureName] = { mean: r.value, ciLow: r.ciLow ?? r.value, ciHigh: r.ciHigh ?? r.value };
        }
        const missing = features.filter((f) => !values[f]);
        if (missing.length) throw new Error(`no shuffle value for ${missing.join(', ')} in the value source`);
        const value = Object.fromEntries(features.map((f) => [f, values[f].mean]));
        checkpoint();

        // interactions: pairs among the most valuable features, shuffled jointly on the full model
        const top = [...features].sort((a, b) => value[b] - value[a]).slice(0, p.interactionTop);
        const pairs: string[][] = [];
        for (let i = 0; i < top.length; i++) for (let j = i + 1; j < top.length; j++) pairs.push([top[i], top[j]]);
        let interactions: { a: string; b: string; joint: number; jointCiLow: number; sumOfOwn: number; together: boolean }[] = [];
        if (pairs.length) {
          await progress(0.05, `ablating ${pairs.length} feature pair(s) jointly`);
          const built = await this.w.samples.get({ ...recipe, features: recipe.features as ResolvedFeature[] });
          const trained = await this.w.trainer.trainOrReuse(
            built,
            recipe.architecture,
            recipe.training,
            { device },
            recipeInit(this.w.dataDir, recipe, built),
          );
          // the grouping is part of the selection: validation split
          const folds = await Promise.all(
            foldIndices(built.validation.rows, p.folds, p.seed).map((idx) => materialize(built.validation, idx)),
          );
          const drops = await groupDrops(trained.model, folds, pairs, p.repeats, p.seed + 101, async (k) => {
            checkpoint();
            await progress(0.05 + (0.7 * k) / folds.length, `joint ablation: fold ${k + 1}/${folds.length}`);
          });
          const raw = pairs.map(([a, b], g) => ({ a, b, ...foldInterval(drops.auc[g], p.alpha) }));
          const groups = interactionGroups(
            raw.map((r) => ({ a: r.a, b: r.b, jointCiLow: r.ciLow })),
            value,
          );
          const inGroup = (a: string, b: string) => groups.some((g) => g.includes(a) && g.includes(b));
          interactions = raw.map((r) => ({
            a: r.a,
            b: r.b,
            joint: r.mean,
            jointCiLow: r.ciLow,
            sumOfOwn: Math.max(0, value[r.a]) + Math.max(0, value[r.b]),
            together: inGroup(r.a, r.b),
          }));
        }
        const groups = interactionGroups(
          interactions.map((r) => ({ a: r.a, b: r.b, jointCiLow: r.jointCiLow })),
          value,
        );
        checkpoint();
        const total = costOf(features, p.costs);
        const full: Picked = { selected: features, value: features.reduce((s, f) => s + Math.max(0, value[f]), 0), cost: total };
        const tiers: TierSelection[] = [
          {
            tier: 0,
            budget: total,
            fractions: { storage: 1, communication: 1, compute: 1 },
            milp: { ...full, status: 'full model', gap: 0 },
            greedy: full,
          },
        ];
        for (const [i, budget] of p.budgets.entries()) {
          await progress(0.8 + (0.2 * i) / p.budgets.length, `selecting tier ${i + 1}`);
          const problem = { features, values: value, costs: p.costs, budget, groups };
          tiers.push({
            tier: i + 1,
            budget,
            fractions: fractionsOf(budget, total),
            milp: await solveMilp(problem),
            greedy: greedySelect(problem),
          });
        }
        // the large tier: the same MILP over the model's features and the pool, valued on the wide
        // model (trained with all of them), on a budget above the full model's cost
        let large: (TierSelection & { pool: string[]; values: Record<string, number> }) | null = null;
        if (p.large) {
          await progress(0.99, 'selecting the large tier');
          const ab = await trialBySeq(this.w.ds, experiment.id, p.large.ablateSeq);
          const wide: Record<string, number> = {};
          for (const g of ab.metrics!.groups as { inputs: string[]; mean: number }[]) {
            if (g.inputs.length === 1) wide[g.inputs[0]] = g.mean;
          }
          const missing = p.large.features.filter((f) => wide[f] === undefined);
          if (missing.length) throw new Error(`no shuffle value for ${missing.join(', ')} on the wide model`);
          const problem = { features: p.large.features, values: wide, costs: p.costs, budget: p.large.budget, groups };
          large = {
            tier: LARGE_TIER,
            budget: p.large.budget,
            fractions: p.large.fractions,
            milp: await solveMilp(problem),
            greedy: greedySelect(problem),
            pool: p.large.pool,
            values: wide,
          };
        }
        return {
          metrics: {
            features,
            // values from a subtract's shuffle scores come from its validation split too (older ones: test)
            valueSplit: 'validation',
            values,
            costs: p.costs,
            total,
            interactions,
            groups,
            tiers,
            large,
          },
        };
      }),
    );
  }
}

/** One tier: the MILP selection and the greedy one, each retrained on every seed (same split as the full model). */
export class DivideTierHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.DivideTierTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, (scope) =>
      withDevice(this.w, async (device) => {
        const { trial, experiment, checkpoint, progress, signal } = scope;
        const p = divideTierParamsSchema.parse(trial.params);
        const select = await trialBySeq(this.w.ds, experiment.id, p.selectSeq);
        const sel =
          p.tier === LARGE_TIER ? (select.metrics!.large as TierSelection) : (select.metrics!.tiers as TierSelection[])[p.tier];
        const costs = select.metrics!.costs as Record<string, Costs>;
        const recipe = { ...p.recipe, features: p.recipe.features as ResolvedFeature[] };
        const sets: { key: 'milp' | 'greedy'; features: string[] }[] = [
          { key: 'milp', features: sel.milp.selected },
          { key: 'greedy', features: sel.greedy.selected },
        ];
        const out: Partial<Record<'milp' | 'greedy', TrainedSet | null>> = {};
        let step = 0;
        const steps = sets.length * p.seeds.length;
        for (const { key, features } of sets) {
          if (!features.length) {
            out[key] = null;
            continue;
          }
          const fs = recipe.features.filter((f) => features.includes(f.name));
          checkpoint();
          const what = `${p.tier === LARGE_TIER ? 'the large tier' : `tier ${p.tier}`} (${key}, ${features.length} features)`;
          await progress(step / steps, `${what}: ${p.seeds.length} seed(s)`);
          const built = await this.w.samples.get(recipe, fs);
          // the seeds as one batch of independent fits (the GPU's lanes, or the CPU's share of the
          // cores); the sets one after the other, so a greedy set equal to the MILP's is found trained
          const perSeed: TrainedSet['perSeed'] = await onDevices(
            this.w.devices,
            device,
            p.seeds.map((seed) => async (dev: number | undefined) => {
              checkpoint();
              const t = await this.w.trainer.trainOrReuse(
                built,
                recipe.architecture,
                { ...recipe.training, seed },
                { signal, device: dev, batch: p.seeds.length > 1 },
                recipeInit(this.w.dataDir, recipe, built),
              );
              step++;
              await progress(step / steps, `${what}: seed ${seed} fitted`);
              return { seed, auc: t.metrics.auc, logloss: t.metrics.logloss, modelDir: t.dir };
            }),
          );
          const mean = (k: 'auc' | 'logloss') => perSeed.reduce((s, r) => s + r[k], 0) / perSeed.length;
          out[key] = { features, auc: mean('auc'), logloss: mean('logloss'), perSeed, cost: costOf(features, costs) };
        }
        return { metrics: { tier: p.tier, budget: sel.budget, fractions: sel.fractions, ...out } };
      }),
    );
  }
}

/** The cost–value frontier from the retrained tiers; each tier published as a version of the model (`tier-<n>`). */
export class DividePublishHandler {
  constructor(private readonly w: WorkflowContext) {}

  handle(payload: JobPayloads[JobName.DividePublishTrial], ctx: JobContext) {
    return runTrial(this.w.ledger, payload, ctx, async ({ trial, experiment }) => {
      const p = dividePublishParamsSchema.parse(trial.params);
      const select = await trialBySeq(this.w.ds, experiment.id, p.selectSeq);
      const total = select.metrics!.total as Costs;
      const selections = select.metrics!.tiers as TierSelection[];
      const selectionOf = (tier: number) => (tier === LARGE_TIER ? (select.metrics!.large as TierSelection) : selections[tier]);
      const tiers = [] as { tier: number; metrics: Record<string, unknown> }[];
      for (const seq of p.tierSeqs) {
        const t = await trialBySeq(this.w.ds, experiment.id, seq);
        tiers.push({ tier: t.metrics!.tier as number, metrics: t.metrics! });
      }
      const full = tiers.find((t) => t.tier === 0)!.metrics.milp as TrainedSet;
      const lift = (auc: number) => (full.auc > 0.5 ? (auc - 0.5) / (full.auc - 0.5) : NaN);
      const spread = (s: TrainedSet) => {
        const a = s.perSeed.map((r) => r.auc);
        return Math.max(...a) - Math.min(...a);
      };
      const point = (s: TrainedSet | null, sel: { selected: string[]; value: number; cost: Costs }) =>
        s
          ? {
              features: s.features.length,
              selected: s.features,
              estimatedValue: sel.value,
              cost: s.cost,
              costFractions: fractionsOf(s.cost, total),
              auc: s.auc,
              logloss: s.logloss,
              aucPerSeed: s.perSeed.map((r) => r.auc),
              seedSpread: spread(s),
              liftKept: lift(s.auc),
            }
          : {
              features: 0,
              selected: [],
              estimatedValue: 0,
              cost: sel.cost,
              costFractions: fractionsOf(sel.cost, total),
              auc: 0.5,
              logloss: NaN,
              aucPerSeed: [],
              seedSpread: 0,
              liftKept: 0,
            };
      const frontier = tiers.map(({ tier, metrics }) => {
        const sel = selectionOf(tier);
        const milp = point(metrics.milp as TrainedSet | null, sel.milp);
        const greedy = point(metrics.greedy as TrainedSet | null, sel.greedy);
        const diff = milp.auc - greedy.auc;
        return {
          tier,
          alias: tier === LARGE_TIER ? 'tier-large' : `tier-${tier}`,
          budget: sel.fractions,
          solver: { status: sel.milp.status, gap: sel.milp.gap },
          milp,
          greedy,
          // MILP vs greedy, retrained: better, the same set, or within the seeds' spread
          milpVsGreedy:
            sel.milp.selected.join() === sel.greedy.selected.join()
              ? 'same selection'
              : diff >= 0
                ? 'milp at least as good'
                : -diff <= Math.max(milp.seedSpread, greedy.seedSpread)
                  ? 'greedy better, within the seed spread'
                  : 'greedy better',
        };
      });

      // the large tier against the full model, both retrained on the same seeds (test split)
      const largeSummary = () => {
        const l = frontier.find((f) => f.tier === LARGE_TIER);
        const f0 = frontier.find((f) => f.tier === 0)!;
        if (!l) return null;
        const gain = l.milp.auc - f0.milp.auc;
        const spreadOf = Math.max(l.milp.seedSpread, f0.milp.seedSpread);
        return {
          pool: (select.metrics!.large as { pool: string[] }).pool,
          added: l.milp.selected.filter((x) => !f0.milp.selected.includes(x)),
          dropped: f0.milp.selected.filter((x) => !l.milp.selected.includes(x)),
          aucGain: gain,
          seedSpread: spreadOf,
          verdict:
            l.milp.features === 0
              ? 'no selection'
              : gain > spreadOf
                ? 'above the full model'
                : gain > 0
                  ? 'above the full model, within the seed spread'
                  : 'not above the full model',
        };
      };

      // publish: one model version per tier (idempotent: a retried trial finds the versions it made)
      const published = await this.w.ds.transaction(async (m) => {
        const repo = m.getRepository(ModelEntity);
        const mine = await repo.findBy({ experimentId: experiment.id });
        const out: { tier: number; id: string; name: string; version: number }[] = [];
        for (const f of frontier) {
          const s = (tiers.find((t) => t.tier === f.tier)!.metrics.milp ?? null) as TrainedSet | null;
          if (!s) continue;
          let row = mine.find((x) => x.tier === f.tier) ?? null;
          if (!row) {
            const latest = await repo
              .createQueryBuilder('m')
              .setLock('pessimistic_write')
              .where('m.business_line = :bl AND m.name = :n', { bl: experiment.businessLine, n: p.publishAs })
              .orderBy('m.version', 'DESC')
              .getOne();
            const costs: ModelCosts = { ...s.cost, fractions: fractionsOf(s.cost, total) };
            row = await repo.save(
              repo.create({
                name: p.publishAs,
                version: (latest?.version ?? 0) + 1,
                businessLine: experiment.businessLine,
                owner: experiment.owner,
                sampleSetId: p.recipe.sampleSetId,
                features: s.features,
                architecture: (f.tier === LARGE_TIER && p.largeRecipe ? p.largeRecipe : p.recipe).architecture as Record<
                  string,
                  unknown
                >,
                trainingParams: p.recipe.training as Record<string, unknown>,
                checkpointPath: s.perSeed[0].modelDir,
                metrics: { auc: s.auc, logloss: s.logloss, liftKept: lift(s.auc) },
                tier: f.tier,
                experimentId: experiment.id,
                costs,
              }),
            );
          }
          out.push({ tier: f.tier, id: row.id, name: row.name, version: row.version });
        }
        return out;
      });
      return {
        metrics: {
          total,
          interactions: (select.metrics!.interactions as { together: boolean }[]).filter((x) => x.together),
          groups: select.metrics!.groups,
          frontier,
          large: largeSummary(),
          published,
          // the selection (values, interacting pairs) read the validation split; the tiers' retrained AUCs are test-split numbers
          splits: { selection: 'validation', tierMetrics: 'test' },
          rule: 'per tier: maximise the summed shuffle value of the selected features (HiGHS MILP) under every resource budget, interacting features together; greedy: value per summed budget share; every selection retrained on the seeds; the large tier: the same over the model’s features and the pool, valued on a model trained with all of them, on a budget above the full model’s cost',
        },
      };
    });
  }
}
