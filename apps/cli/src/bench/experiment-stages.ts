/** A trial of an experiment as the API returns it (only what the benches read). */
export interface StageTrial {
  kind: string;
  status?: string;
  startedAt: string | null;
  finishedAt: string | null;
  backend?: string | null;
  attempts?: number;
  metrics: {
    role?: string;
    /** ablate: the split its folds come from */
    split?: string;
    /** divide's tier trials */
    tier?: number;
    timings?: Record<string, unknown>;
  } | null;
}

export interface StageExperiment {
  createdAt: string;
  finishedAt: string | null;
  trials: StageTrial[];
}

export interface StageSplit<S extends Record<string, number>> {
  /** platform wall time: experiment created → finished */
  experimentMs: number;
  /** created → first trial start, then the stages `pick` made */
  stages: { queueWaitMs: number } & S;
  /** experimentMs less every stage */
  otherMs: number;
  /** otherMs, explained (exact when no trials overlapped) */
  other: {
    /** trial time no recorded timing of the trial covers (loading models, reading other trials, untimed work) */
    untimedInTrialsMs: number;
    /** between trials: queue hops, the ledger, finalizing */
    betweenTrialsMs: number;
  };
  slowestStage: string;
  /** trials ran at the same time (more than one worker slot): then the stages can sum past the wall time */
  overlapping: boolean;
  trials: { kind: string; role: string | null; ms: number; attempts: number | null; untimedMs: number }[];
}

const LARGE_TIER = -1;

/** wall time of one trial (0 when it never ran) */
export function trialMs(t: StageTrial | undefined): number {
  return t?.startedAt && t.finishedAt ? Date.parse(t.finishedAt) - Date.parse(t.startedAt) : 0;
}

/** one recorded timing of a trial (0 when absent) */
export function timing(t: StageTrial | undefined, key: string): number {
  const v = t?.metrics?.timings?.[key];
  return typeof v === 'number' ? v : 0;
}

/** the sum of a trial's recorded timings (its top-level numbers: `build`'s breakdown is part of buildMs) */
export function recordedMs(t: StageTrial): number {
  return Object.values(t.metrics?.timings ?? {}).reduce<number>((a, v) => a + (typeof v === 'number' ? v : 0), 0);
}

/** a trial's role in the bench's output: its own (train), else the split (ablate) or the tier (divide) */
export function trialRole(t: StageTrial): string | null {
  const m = t.metrics;
  if (m?.role) return m.role;
  if (t.kind === 'ablate' && m?.split) return `${m.split} shuffle`;
  if (t.kind === 'tier' && typeof m?.tier === 'number') return m.tier === LARGE_TIER ? 'tier-large' : `tier-${m.tier}`;
  return null;
}

/**
 * The wall time of a finished experiment split into `stages` (built from its trials by `pick`),
 * what is left, and where that is: trial time not covered by the trial's timings (or, for a trial
 * counted whole as a stage — one that records none — nothing), and the time between trials.
 */
export function splitStages<S extends Record<string, number>>(
  e: StageExperiment,
  pick: (find: (kind: string, f?: (t: StageTrial) => boolean) => StageTrial | undefined) => S,
  /** trials counted whole (by kind): a stage is their wall time */
  whole: readonly string[] = [],
): StageSplit<S> {
  if (!e.finishedAt) throw new Error('the experiment has not finished');
  const experimentMs = Date.parse(e.finishedAt) - Date.parse(e.createdAt);
  const started = e.trials.filter((t) => t.startedAt);
  const firstStart = started.length ? Math.min(...started.map((t) => Date.parse(t.startedAt!))) : Date.parse(e.finishedAt);
  const stages = pick((kind, f) => e.trials.find((t) => t.kind === kind && (!f || f(t))));
  const queueWaitMs = firstStart - Date.parse(e.createdAt);
  const all = { queueWaitMs, ...stages };
  const accounted = Object.values(all).reduce((a, b) => a + b, 0);
  const untimed = (t: StageTrial) => (whole.includes(t.kind) ? 0 : Math.max(0, trialMs(t) - recordedMs(t)));
  const trials = e.trials.map((t) => ({
    kind: t.kind,
    role: trialRole(t),
    ms: trialMs(t),
    attempts: t.attempts ?? null,
    untimedMs: untimed(t),
  }));
  const spans = started
    .filter((t) => t.finishedAt)
    .map((t) => [Date.parse(t.startedAt!), Date.parse(t.finishedAt!)] as const)
    .sort((a, b) => a[0] - b[0]);
  const overlapping = spans.some((s, i) => i > 0 && s[0] < Math.max(...spans.slice(0, i).map((p) => p[1])));
  const untimedInTrialsMs = trials.reduce((a, t) => a + t.untimedMs, 0);
  const walls = trials.reduce((a, t) => a + t.ms, 0);
  return {
    experimentMs,
    stages: all,
    otherMs: experimentMs - accounted,
    other: { untimedInTrialsMs, betweenTrialsMs: experimentMs - queueWaitMs - walls },
    slowestStage: Object.entries(all).sort((a, b) => b[1] - a[1])[0][0],
    overlapping,
    trials,
  };
}

/**
 * add (base and augmented fits, the validation screen and the test contribution shuffles on the
 * augmented model, then compare's leave-one-in refits and bootstraps), by stage from the trials'
 * own timings: sample building and training of the two models, each shuffle, the leave-one-in
 * refits (their fold builds included), the per-candidate bootstraps, and the shuffles' result writes.
 */
export function addStages(e: StageExperiment) {
  return splitStages(e, (find) => {
    const base = find('train', (t) => t.metrics?.role === 'base');
    const aug = find('train', (t) => t.metrics?.role === 'augmented');
    const screen = find('ablate', (t) => t.metrics?.split === 'validation');
    const contribution = find('ablate', (t) => t.metrics?.split === 'test');
    const compare = find('compare');
    return {
      sampleBuildMs: timing(base, 'buildMs') + timing(aug, 'buildMs'),
      baseTrainingMs: timing(base, 'trainMs'),
      augmentedTrainingMs: timing(aug, 'trainMs'),
      screenAblationMs: timing(screen, 'ablateMs'),
      contributionAblationMs: timing(contribution, 'ablateMs'),
      leaveOneInMs: timing(compare, 'leaveOneInMs'),
      bootstrapMs: timing(compare, 'bootstrapMs'),
      databaseWritesMs: timing(screen, 'writeMs') + timing(contribution, 'writeMs'),
    };
  });
}

/** trial kinds of divide that record no timings: the bench counts their whole wall time as their stage */
export const DIVIDE_UNTIMED = ['select', 'tier', 'publish'] as const;

/**
 * divide (a chain: train → ablate → select → tier 0 … k → publish), by stage: the full model's
 * sample build and training and its shuffle values with their write, from the trials' timings; the
 * selection (joint ablation of the top pairs, the MILP and greedy per tier), the tiers' retraining
 * (their sample builds included) and publishing, from those trials' wall times (they record none).
 */
export function divideStages(e: StageExperiment) {
  const wall = (kind: string) => e.trials.filter((t) => t.kind === kind).reduce((a, t) => a + trialMs(t), 0);
  return splitStages(
    e,
    (find) => {
      const base = find('train');
      const ablate = find('ablate');
      return {
        sampleBuildMs: timing(base, 'buildMs'),
        trainingMs: timing(base, 'trainMs'),
        ablationMs: timing(ablate, 'ablateMs'),
        databaseWritesMs: timing(ablate, 'writeMs'),
        selectMs: wall('select'),
        tierRetrainingMs: wall('tier'),
        publishMs: wall('publish'),
      };
    },
    DIVIDE_UNTIMED,
  );
}
