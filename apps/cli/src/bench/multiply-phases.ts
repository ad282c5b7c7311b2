/** A trial of a multiply experiment as the API returns it (only what the bench reads). */
export interface MultiplyBenchTrial {
  kind: string;
  status: string;
  startedAt: string | null;
  finishedAt: string | null;
  backend?: string | null;
  metrics: {
    strategy?: string;
    sources?: string[];
    perSeed?: { seed: number; cached?: boolean; trainMs?: number }[];
    timings?: { alignMs?: number; buildMs?: number; trainMs?: number; bootstrapMs?: number };
    cached?: { union?: boolean; samples?: boolean };
  } | null;
}

export interface MultiplyBenchExperiment {
  createdAt: string;
  finishedAt: string | null;
  trials: MultiplyBenchTrial[];
}

export interface MultiplyModelTimes {
  strategy: string;
  sources: string[];
  trialMs: number;
  alignMs: number;
  buildMs: number;
  trainMs: number;
  perSeedTrainMs: { seed: number; ms: number; cached: boolean }[];
  unionCached: boolean;
  samplesCached: boolean;
}

export interface MultiplyPhases {
  /** platform wall time: experiment created → finished */
  experimentMs: number;
  phases: {
    queueWaitMs: number;
    unionAlignMs: number;
    sampleBuildMs: number;
    /** summed over the seeds and the models of each strategy */
    trainingMs: Record<string, number>;
    compareMs: number;
    otherMs: number;
  };
  /** part of compareMs: the paired bootstraps alone */
  bootstrapMs: number | null;
  /** what the trials found already there (written earlier, by this experiment or an earlier one) */
  reused: {
    unionFiles: { reused: number; of: number };
    builtSamples: { reused: number; of: number };
    models: { reused: number; of: number };
  };
  /** trials ran at the same time (more than one worker slot): then the phase sums can exceed the wall time */
  overlapping: boolean;
  models: MultiplyModelTimes[];
}

const ms = (from: string | null, to: string | null): number => (from && to ? Date.parse(to) - Date.parse(from) : 0);

/**
 * The wall time of a finished multiply experiment split by phase from its trials' own timings: queue
 * wait (created → first trial start), union alignment, sample building, training per strategy (every
 * seed of every model), the compare trial (its bootstraps counted apart), and the remainder (queue
 * hops between trials, reading and writing the ledger, finalizing).
 */
export function multiplyPhases(e: MultiplyBenchExperiment): MultiplyPhases {
  if (!e.finishedAt) throw new Error('the experiment has not finished');
  const experimentMs = ms(e.createdAt, e.finishedAt);
  const started = e.trials.filter((t) => t.startedAt);
  const firstStart = started.length ? Math.min(...started.map((t) => Date.parse(t.startedAt!))) : Date.parse(e.finishedAt);
  const models: MultiplyModelTimes[] = e.trials
    .filter((t) => t.kind === 'train')
    .map((t) => {
      const m = t.metrics ?? {};
      return {
        strategy: m.strategy ?? 'unknown',
        sources: m.sources ?? [],
        trialMs: ms(t.startedAt, t.finishedAt),
        alignMs: m.timings?.alignMs ?? 0,
        buildMs: m.timings?.buildMs ?? 0,
        trainMs: m.timings?.trainMs ?? 0,
        perSeedTrainMs: (m.perSeed ?? []).map((s) => ({ seed: s.seed, ms: s.trainMs ?? 0, cached: s.cached === true })),
        unionCached: m.cached?.union === true,
        samplesCached: m.cached?.samples === true,
      };
    });
  const trainingMs: Record<string, number> = {};
  for (const m of models) trainingMs[m.strategy] = (trainingMs[m.strategy] ?? 0) + m.trainMs;
  const compare = e.trials.find((t) => t.kind === 'compare');
  const sum = (f: (m: MultiplyModelTimes) => number) => models.reduce((a, m) => a + f(m), 0);
  const phases = {
    queueWaitMs: firstStart - Date.parse(e.createdAt),
    unionAlignMs: sum((m) => m.alignMs),
    sampleBuildMs: sum((m) => m.buildMs),
    trainingMs,
    compareMs: compare ? ms(compare.startedAt, compare.finishedAt) : 0,
    otherMs: 0,
  };
  const accounted =
    phases.queueWaitMs +
    phases.unionAlignMs +
    phases.sampleBuildMs +
    Object.values(trainingMs).reduce((a, b) => a + b, 0) +
    phases.compareMs;
  phases.otherMs = experimentMs - accounted;
  const spans = started
    .filter((t) => t.finishedAt)
    .map((t) => [Date.parse(t.startedAt!), Date.parse(t.finishedAt!)] as const)
    .sort((a, b) => a[0] - b[0]);
  const overlapping = spans.some((s, i) => i > 0 && s[0] < Math.max(...spans.slice(0, i).map((p) => p[1])));
  const seeds = models.flatMap((m) => m.perSeedTrainMs);
  return {
    experimentMs,
    phases,
    bootstrapMs: compare?.metrics?.timings?.bootstrapMs ?? null,
    reused: {
      unionFiles: { reused: models.filter((m) => m.unionCached).length, of: models.length },
      builtSamples: { reused: models.filter((m) => m.samplesCached).length, of: models.length },
      models: { reused: seeds.filter((s) => s.cached).length, of: seeds.length },
    },
    overlapping,
    models,
  };
}
