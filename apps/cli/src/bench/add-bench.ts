import type { ApiClient } from '../api-client';
import { addCandidates, baseFeatures } from './bench-plan';
import {
  benchTraining,
  BENCH_LINE,
  benchMachine,
  benchSetup,
  runBenchExperiment,
  withBenchSamples,
  type BenchSamplesOptions,
} from './experiment-bench';
import { addStages, type StageExperiment } from './experiment-stages';

interface Experiment extends StageExperiment {
  id: string;
  status: string;
  error: string | null;
  result: {
    base?: { auc: number };
    augmented?: { auc: number };
    delta?: { auc: { delta: number; ciLow: number; ciHigh: number } };
    candidates?: { feature: string; verdict: string; evidence: string; leaveOneIn: unknown }[];
    adopted?: string[];
    rejected?: string[];
    inconclusive?: string[];
  } | null;
}

export interface AddBenchOptions extends Omit<BenchSamplesOptions, 'noiseColumns'> {
  backend: 'cpu' | 'cuda';
  /** add candidates beyond the base model's `features` */
  candidates: number;
}

/**
 * End-to-end wall time of one add experiment through the API on a simulated world, split by stage
 * from the trials' own timings. The base model is the table's first `features` features (the
 * simulator's own, then per-impression noise columns); the candidates are the simulator's features
 * with a planted effect that the base leaves out (strongest first), then more noise columns to
 * make up `candidates`. Default spec, no notification.
 */
export async function runAddBench(api: ApiClient, o: AddBenchOptions): Promise<Record<string, unknown>> {
  const log = o.onStatus ?? (() => undefined);
  const plan = (catalog: readonly { name: string; effect: number }[]) => {
    const base = baseFeatures(
      catalog.map((f) => f.name),
      o.features,
    );
    return { base, candidates: addCandidates(catalog, base, o.candidates) };
  };
  return withBenchSamples(api, { ...o, noiseColumns: (c) => plan(c).candidates.noiseColumns }, async (s) => {
    const { base, candidates } = plan(s.catalog);
    log(
      `submitting add on ${base.length} features + ${candidates.names.length} candidates (${candidates.simulator.length} of the simulator's, ${candidates.noise.length} noise)`,
    );
    const { experiment: e, clientWallMs } = await runBenchExperiment<Experiment>(api, {
      kind: 'add',
      businessLine: BENCH_LINE,
      name: `bench ${o.rows} rows x ${base.length} features + ${candidates.names.length} candidates`,
      spec: { base: { sampleSet: s.sampleSet.id, features: base, ...benchTraining(o) }, candidates: candidates.names, notify: false, seed: o.seed },
    });
    const split = addStages(e);
    const r = e.result;
    const cands = r?.candidates ?? [];
    return {
      bench: 'experiment-add',
      experimentId: e.id,
      rows: s.sampleSet.rowCount,
      features: base.length,
      candidates: {
        count: candidates.names.length,
        simulator: candidates.simulator,
        noise: candidates.noise,
      },
      backendRequested: o.backend,
      backendUsed: [...new Set(e.trials.map((t) => t.backend).filter(Boolean))],
      // the stage split (experimentMs, stages, otherMs, slowestStage, overlapping, trials); `other` says
      // where the rest went: trial time no recorded timing covers (e.g. compare's overall bootstrap,
      // verdict and provenance writes), and the time between trials
      ...split,
      clientWallMs,
      setup: benchSetup(s),
      verdicts: {
        adopted: r?.adopted?.length ?? 0,
        rejected: r?.rejected?.length ?? 0,
        inconclusive: r?.inconclusive?.length ?? 0,
        // candidates the validation screen passed on to the leave-one-in refits
        leaveOneIn: cands.filter((c) => c.evidence === 'leave-one-in').length,
        byFeature: Object.fromEntries(cands.map((c) => [c.feature, c.verdict])),
      },
      result: {
        baseAuc: r?.base?.auc ?? null,
        augmentedAuc: r?.augmented?.auc ?? null,
        deltaAuc: r?.delta?.auc?.delta ?? null,
      },
      machine: benchMachine(),
      date: new Date().toISOString(),
    };
  });
}
