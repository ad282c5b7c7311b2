import { describe, expect, it } from 'vitest';
import { addStages, divideStages, recordedMs, trialRole, type StageTrial } from './experiment-stages';

const at = (s: number) => new Date(Date.UTC(2026, 10, 29, 0, 0, 0) + s * 1000).toISOString();

const trial = (kind: string, from: number, to: number, metrics: StageTrial['metrics']): StageTrial => ({
  kind,
  status: 'succeeded',
  startedAt: at(from),
  finishedAt: at(to),
  backend: 'cpu',
  attempts: 1,
  metrics,
});

describe('addStages', () => {
  // base 1–4 s, augmented 4–8 s, validation shuffle 8–9 s, test shuffle 9–10 s, compare 10–20 s; finished at 21 s
  const e = {
    createdAt: at(0),
    finishedAt: at(21),
    trials: [
      trial('train', 1, 4, { role: 'base', timings: { buildMs: 1000, trainMs: 1500, build: { readMs: 300 } } }),
      trial('train', 4, 8, { role: 'augmented', timings: { buildMs: 1200, trainMs: 2500 } }),
      trial('ablate', 8, 9, { split: 'validation', timings: { ablateMs: 600, writeMs: 100 } }),
      trial('ablate', 9, 10, { split: 'test', timings: { ablateMs: 700, writeMs: 50 } }),
      trial('compare', 10, 20, { timings: { leaveOneInMs: 8000, bootstrapMs: 900 } }),
    ],
  };

  it('splits the wall time into the stages the trials record, and explains the rest', () => {
    const s = addStages(e);
    expect(s.experimentMs).toBe(21_000);
    expect(s.stages).toEqual({
      queueWaitMs: 1000,
      sampleBuildMs: 2200,
      baseTrainingMs: 1500,
      augmentedTrainingMs: 2500,
      screenAblationMs: 600,
      contributionAblationMs: 700,
      leaveOneInMs: 8000,
      bootstrapMs: 900,
      databaseWritesMs: 150,
    });
    expect(s.otherMs).toBe(21_000 - 17_550);
    // untimed: base 500, augmented 300, shuffles 300 + 250, compare 1100; between trials: the last second
    expect(s.other).toEqual({ untimedInTrialsMs: 2450, betweenTrialsMs: 1000 });
    expect(s.other.untimedInTrialsMs + s.other.betweenTrialsMs).toBe(s.otherMs);
    expect(s.slowestStage).toBe('leaveOneInMs');
    expect(s.overlapping).toBe(false);
    expect(s.trials.map((t) => [t.kind, t.role, t.ms])).toEqual([
      ['train', 'base', 3000],
      ['train', 'augmented', 4000],
      ['ablate', 'validation shuffle', 1000],
      ['ablate', 'test shuffle', 1000],
      ['compare', null, 10_000],
    ]);
  });

  it('says when trials overlapped (base and augmented at once)', () => {
    const both = { ...e, trials: [trial('train', 1, 4, { role: 'base' }), trial('train', 2, 8, { role: 'augmented' })] };
    expect(addStages(both).overlapping).toBe(true);
  });

  it('refuses an unfinished experiment', () => {
    expect(() => addStages({ ...e, finishedAt: null })).toThrow(/not finished/);
  });
});

describe('divideStages', () => {
  it('counts select, tier and publish trials whole (they record no timings) and the rest from timings', () => {
    const e = {
      createdAt: at(0),
      finishedAt: at(30),
      trials: [
        trial('train', 0.5, 4, { role: 'base', timings: { buildMs: 1000, trainMs: 2000 } }),
        trial('ablate', 4, 6, { split: 'validation', timings: { ablateMs: 1500, writeMs: 200 } }),
        trial('select', 6, 10, {}),
        trial('tier', 10, 14, { tier: 0 }),
        trial('tier', 14, 20, { tier: 1 }),
        trial('tier', 20, 28, { tier: 2 }),
        trial('publish', 28, 29, {}),
      ],
    };
    const s = divideStages(e);
    expect(s.stages).toEqual({
      queueWaitMs: 500,
      sampleBuildMs: 1000,
      trainingMs: 2000,
      ablationMs: 1500,
      databaseWritesMs: 200,
      selectMs: 4000,
      tierRetrainingMs: 18_000,
      publishMs: 1000,
    });
    expect(s.otherMs).toBe(1800);
    // train 500 + ablate 300 untimed; the last second between trials; whole trials add nothing
    expect(s.other).toEqual({ untimedInTrialsMs: 800, betweenTrialsMs: 1000 });
    expect(s.slowestStage).toBe('tierRetrainingMs');
    expect(s.trials.filter((t) => t.kind === 'tier').map((t) => [t.role, t.ms, t.untimedMs])).toEqual([
      ['tier-0', 4000, 0],
      ['tier-1', 6000, 0],
      ['tier-2', 8000, 0],
    ]);
  });
});

describe('trial helpers', () => {
  it("sum a trial's own timings (not the build's breakdown) and name its role", () => {
    expect(recordedMs(trial('train', 0, 1, { timings: { buildMs: 5, trainMs: 7, build: { readMs: 3 } } }))).toBe(12);
    expect(recordedMs(trial('select', 0, 1, null))).toBe(0);
    expect(trialRole(trial('tier', 0, 1, { tier: -1 }))).toBe('tier-large');
    expect(trialRole(trial('publish', 0, 1, {}))).toBeNull();
  });
});
