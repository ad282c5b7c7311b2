import type { GroundTruthFeature } from '@abacus/samples';
import type { ApiClient } from '../api-client';
import { baseFeatures, budgetTiers } from './bench-plan';
import {
  benchTraining,
  BENCH_LINE,
  benchMachine,
  benchSetup,
  runBenchExperiment,
  withBenchSamples,
  type BenchSamplesOptions,
} from './experiment-bench';
import { DIVIDE_UNTIMED, divideStages, trialMs, type StageExperiment } from './experiment-stages';

interface FrontierPoint {
  features: number;
  auc: number;
  seedSpread: number;
  liftKept: number;
  costFractions: Record<string, number>;
}

interface Experiment extends StageExperiment {
  id: string;
  status: string;
  error: string | null;
  result: {
    frontier?: {
      tier: number;
      alias: string;
      budget: Record<string, number>;
      solver: { status: string; gap: number };
      milp: FrontierPoint;
      greedy: FrontierPoint;
      milpVsGreedy: string;
    }[];
    published?: { tier: number }[];
  } | null;
}

export interface DivideBenchOptions extends Omit<BenchSamplesOptions, 'noiseColumns'> {
  backend: 'cpu' | 'cuda';
  /** budget tiers, the full model (tier 0) included */
  tiers: number;
}

/** A per-impression noise column's declared cost: one float32, like the simulator's numeric features. */
const NOISE_COSTS = { storageBytesPerEntity: 4, fetchBytesPerRequest: 4, computeCost: 1 };

/**
 * Declared costs in the bench line's registry for every feature of the model (divide needs one for
 * each): the simulator's own from its ground truth, a noise column's as one numeric value. A
 * feature already registered with costs is left as it is.
 */
async function declareCosts(
  api: ApiClient,
  features: string[],
  catalog: readonly GroundTruthFeature[],
): Promise<{ registered: number; costed: number }> {
  type Registered = { id: string; name: string; costs: { storageBytesPerEntity?: number } };
  const have: Registered[] = [];
  for (let page = 1; ; page++) {
    const res = await api.get<{ items: Registered[] }>(`/features?businessLine=${BENCH_LINE}&pageSize=500&page=${page}`);
    have.push(...res.items);
    if (res.items.length < 500) break;
  }
  let registered = 0;
  let costed = 0;
  for (const name of features) {
    const truth = catalog.find((f) => f.name === name);
    const costs = { ...(truth ? { ...truth.costs, entity: truth.table } : NOISE_COSTS), source: 'declared' };
    const f = have.find((x) => x.name === name);
    if (!f) {
      await api.post('/features', {
        name,
        businessLine: BENCH_LINE,
        kind: truth?.kind ?? 'numeric',
        description: truth ? 'simulated feature (bench table column)' : 'per-impression noise column (bench table)',
        costs,
      });
      registered++;
    } else if (f.costs.storageBytesPerEntity === undefined) {
      await api.patch(`/features/${f.id}`, { costs });
      costed++;
    }
  }
  return { registered, costed };
}

/**
 * End-to-end wall time of one divide experiment through the API on a simulated world: the table's
 * first `features` features (the simulator's own, then per-impression noise columns) with declared
 * costs, `tiers` budget tiers (1, then evenly 0.7 … 0.3), otherwise the default spec. Split by stage:
 * the full model's build, training and shuffle values from its trials' timings; selection, tier
 * retraining and publishing from those trials' wall times (they record no timings).
 */
export async function runDivideBench(api: ApiClient, o: DivideBenchOptions): Promise<Record<string, unknown>> {
  const log = o.onStatus ?? (() => undefined);
  const noiseColumns = (catalog: readonly { name: string }[]) => Math.max(0, o.features - catalog.length);
  return withBenchSamples(api, { ...o, noiseColumns }, async (s) => {
    const features = baseFeatures(
      s.catalog.map((f) => f.name),
      o.features,
    );
    const tiers = budgetTiers(o.tiers);
    const t0 = Date.now();
    log(`declaring the costs of ${features.length} features in the ${BENCH_LINE} line`);
    const declared = await declareCosts(api, features, s.catalog);
    const costsMs = Date.now() - t0;
    log(`submitting divide on ${features.length} features, tiers ${tiers.join(', ')}`);
    const { experiment: e, clientWallMs } = await runBenchExperiment<Experiment>(api, {
      kind: 'divide',
      businessLine: BENCH_LINE,
      name: `bench ${o.rows} rows x ${features.length} features, ${tiers.length} tiers`,
      spec: { model: { sampleSet: s.sampleSet.id, features, ...benchTraining(o) }, tiers, seed: o.seed },
    });
    const split = divideStages(e);
    const tierMs = (tier: number) => trialMs(e.trials.find((t) => t.kind === 'tier' && t.metrics?.tier === tier));
    const point = (p: FrontierPoint | undefined) =>
      p ? { features: p.features, auc: p.auc, seedSpread: p.seedSpread, liftKept: p.liftKept } : null;
    return {
      bench: 'experiment-divide',
      experimentId: e.id,
      rows: s.sampleSet.rowCount,
      features: features.length,
      tiers: tiers.length,
      budgets: tiers,
      backendRequested: o.backend,
      backendUsed: [...new Set(e.trials.map((t) => t.backend).filter(Boolean))],
      // the stage split (experimentMs, stages, otherMs and other, slowestStage, overlapping, trials)
      ...split,
      // stages that are whole trials' wall times: these trials record no timings of their own
      fromTrialWallTimes: DIVIDE_UNTIMED,
      clientWallMs,
      setup: { ...benchSetup(s), declareCostsMs: costsMs, ...declared },
      // per tier: the MILP selection (published) and the greedy one, each retrained on every seed (test AUC)
      frontier: (e.result?.frontier ?? []).map((f) => ({
        tier: f.tier,
        budget: f.budget,
        ms: tierMs(f.tier),
        milp: point(f.milp),
        greedy: point(f.greedy),
        milpVsGreedy: f.milpVsGreedy,
        solver: f.solver.status,
      })),
      published: e.result?.published?.length ?? 0,
      machine: benchMachine(),
      date: new Date().toISOString(),
    };
  });
}
