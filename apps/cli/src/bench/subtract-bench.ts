import type { ApiClient } from '../api-client';
import { baseFeatures } from './bench-plan';
import {
  benchTraining,
  BENCH_LINE,
  benchMachine,
  benchSetup,
  runBenchExperiment,
  withBenchSamples,
  type BenchSamplesOptions,
} from './experiment-bench';

interface Trial {
  attempts?: number;
  kind: string;
  status: string;
  startedAt: string | null;
  finishedAt: string | null;
  backend?: string | null;
  metrics: {
    role?: string;
    timings?: Record<string, number> & { build?: unknown };
    curve?: { check: 'permutation' | 'retrain' }[];
    seeds?: number[];
    lookahead?: number;
    perSeed?: { label: string; seed: number; cached: boolean; trainMs?: number; evalMs?: number | null; saveMs?: number | null }[];
    epochs?: number;
    steps?: number;
    trainMs?: number;
    scoredOn?: string;
    streamedBuild?: { firstChunkMs: number; buildEndMs: number };
  } | null;
}

interface Experiment {
  id: string;
  status: string;
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
  trials: Trial[];
  result: { removable?: string[]; full?: { auc: number }; confirmed?: { auc: number } | null } | null;
}

export interface SubtractBenchOptions extends Omit<BenchSamplesOptions, 'noiseColumns'> {
  backend: 'cpu' | 'cuda';
}

/**
 * End-to-end wall time of one subtract experiment through the API on a simulated world, split by
 * stage from the trials' own timings, so the slowest stage is visible. The worker must run with the
 * backend asked for (ABACUS_RUNTIME_BACKEND); the result reports what the trials actually used.
 */
export async function runSubtractBench(api: ApiClient, o: SubtractBenchOptions): Promise<Record<string, unknown>> {
  const log = o.onStatus ?? (() => undefined);
  const noiseColumns = (catalog: readonly { name: string }[]) => Math.max(0, o.features - catalog.length);
  return withBenchSamples(api, { ...o, noiseColumns }, async (s) => {
    const ss = s.sampleSet;
    const features = baseFeatures(s.catalog.map((f) => f.name), o.features);
    log(`submitting subtract on ${features.length} features`);
    const { experiment: e, clientWallMs: wallMs } = await runBenchExperiment<Experiment>(api, {
      kind: 'subtract',
      businessLine: BENCH_LINE,
      name: `bench ${o.rows} rows x ${features.length} features`,
      spec: { model: { sampleSet: ss.id, features, ...benchTraining(o) }, seed: o.seed },
    });

    const ms = (t: Trial | undefined) => (t?.startedAt && t.finishedAt ? Date.parse(t.finishedAt) - Date.parse(t.startedAt) : 0);
    const trial = (kind: string, role?: string) => e.trials.find((t) => t.kind === kind && (!role || t.metrics?.role === role));
    const base = trial('train', 'base');
    const shuffle = trial('ablate');
    const iv = trial('score');
    const prune = trial('prune');
    const confirm = trial('train', 'pruned');
    const firstStart = Math.min(...e.trials.filter((t) => t.startedAt).map((t) => Date.parse(t.startedAt!)));
    const stages = {
      queueWaitMs: firstStart - Date.parse(e.createdAt),
      sampleBuildMs: (base?.metrics?.timings?.buildMs ?? 0) + (confirm?.metrics?.timings?.buildMs ?? 0),
      trainingMs: base?.metrics?.timings?.trainMs ?? 0,
      scoringMs: (iv?.metrics?.timings?.readMs ?? 0) + (iv?.metrics?.timings?.scoreMs ?? 0),
      ablationMs: (shuffle?.metrics?.timings?.ablateMs ?? 0) + (prune?.metrics?.timings?.ablateMs ?? 0),
      pruneRetrainingMs: prune?.metrics?.timings?.retrainMs ?? 0,
      confirmatoryRetrainMs: (confirm?.metrics?.timings?.trainMs ?? 0) + (confirm?.metrics?.timings?.buildMs ?? 0),
      databaseWritesMs:
        (iv?.metrics?.timings?.writeMs ?? 0) +
        (shuffle?.metrics?.timings?.writeMs ?? 0) +
        (prune?.metrics?.timings?.writeMs ?? 0),
    };
    const experimentMs = Date.parse(e.finishedAt!) - Date.parse(e.createdAt);
    const accounted = Object.values(stages).reduce((a, b) => a + b, 0);
    const slowest = Object.entries(stages).sort((a, b) => b[1] - a[1])[0][0];
    return {
      bench: 'experiment-subtract',
      experimentId: e.id,
      rows: ss.rowCount,
      features: features.length,
      backendRequested: o.backend,
      backendUsed: [...new Set(e.trials.map((t) => t.backend).filter(Boolean))],
      stages,
      otherMs: experimentMs - accounted,
      slowestStage: slowest,
      experimentMs,
      clientWallMs: wallMs,
      setup: benchSetup(s),
      trials: e.trials.map((t) => ({
        kind: t.kind,
        role: t.metrics?.role ?? null,
        ms: ms(t),
        // when it started, from the experiment's creation: the stages' overlap (IV beside the base trial)
        startMs: t.startedAt ? Date.parse(t.startedAt) - Date.parse(e.createdAt) : null,
        attempts: t.attempts ?? null,
        ...(t.metrics?.scoredOn ? { scoredOn: t.metrics.scoredOn, timings: t.metrics.timings ?? null } : {}),
      })),
      base: base?.metrics
        ? {
            epochs: base.metrics.epochs ?? null,
            steps: base.metrics.steps ?? null,
            trainMs: base.metrics.trainMs ?? null,
            // the fit's forward passes and write, and the sample build's stages (read, join + statistics, encode)
            fit: base.metrics.perSeed?.[0] ?? null,
            build: base.metrics.timings?.build ?? null,
            // an in-order first epoch on samples built in the trial: when its first chunk began and the build ended (ms)
            streamedBuild: base.metrics.streamedBuild ?? null,
          }
        : null,
      // the prune step's own account: checks by kind, retrained sets and fits, their build and fit time
      prune: prune?.metrics
        ? {
            timings: prune.metrics.timings ?? null,
            // retraining checks fitted ahead of being asked for (the worker's ABACUS_PRUNE_LOOKAHEAD)
            lookahead: prune.metrics.lookahead ?? 0,
            checks: {
              permutation: prune.metrics.curve?.filter((c) => c.check === 'permutation').length ?? 0,
              retrain: prune.metrics.curve?.filter((c) => c.check === 'retrain').length ?? 0,
            },
          }
        : null,
      confirm: confirm?.metrics
        ? {
            timings: confirm.metrics.timings ?? null,
            seeds: confirm.metrics.seeds ?? null,
            // fits found done (the whole model on its first seeds, trained by the prune step with lookahead)
            reusedFits: confirm.metrics.perSeed?.filter((f) => f.cached).length ?? 0,
            // the fits trained here: training, forward passes, write (ms)
            fits: confirm.metrics.perSeed?.filter((f) => !f.cached) ?? [],
          }
        : null,
      result: {
        removable: e.result?.removable?.length ?? null,
        fullAuc: e.result?.full?.auc ?? null,
        confirmedAuc: e.result?.confirmed?.auc ?? null,
      },
      machine: benchMachine(),
      date: new Date().toISOString(),
    };
  });
}
