import { describe, expect, it } from 'vitest';
import { multiplyPhases, type MultiplyBenchTrial } from './multiply-phases';

const at = (s: number) => new Date(Date.UTC(2026, 10, 23, 0, 0, 0) + s * 1000).toISOString();

function train(
  strategy: string,
  sources: string[],
  from: number,
  to: number,
  t: { alignMs: number; buildMs: number; seeds: [number, boolean][] },
  cached = { union: false, samples: false },
): MultiplyBenchTrial {
  return {
    kind: 'train',
    status: 'succeeded',
    startedAt: at(from),
    finishedAt: at(to),
    backend: 'cpu',
    metrics: {
      strategy,
      sources,
      perSeed: t.seeds.map(([ms, c], k) => ({ seed: k + 1, trainMs: ms, cached: c })),
      timings: { alignMs: t.alignMs, buildMs: t.buildMs, trainMs: t.seeds.reduce((a, [ms]) => a + ms, 0) },
      cached,
    },
  };
}

describe('multiplyPhases', () => {
  const trials: MultiplyBenchTrial[] = [
    train('target_only', [], 2, 10, {
      alignMs: 1000,
      buildMs: 2000,
      seeds: [
        [2000, false],
        [2500, false],
      ],
    }),
    train('union', ['feed/a'], 10, 20, {
      alignMs: 3000,
      buildMs: 2000,
      seeds: [
        [2000, false],
        [2000, false],
      ],
    }),
    train(
      'pretrain_finetune',
      ['feed/a'],
      20,
      25,
      {
        alignMs: 10,
        buildMs: 200,
        seeds: [
          [2000, false],
          [1000, true],
        ],
      },
      { union: true, samples: true },
    ),
    {
      kind: 'compare',
      status: 'succeeded',
      startedAt: at(26),
      finishedAt: at(29),
      metrics: { timings: { bootstrapMs: 2500 } },
    },
  ];

  it('splits the wall time into queue wait, alignment, building, training per strategy, compare and the rest', () => {
    const r = multiplyPhases({ createdAt: at(0), finishedAt: at(30), trials });
    expect(r.experimentMs).toBe(30_000);
    expect(r.phases).toEqual({
      queueWaitMs: 2000,
      unionAlignMs: 4010,
      sampleBuildMs: 4200,
      trainingMs: { target_only: 4500, union: 4000, pretrain_finetune: 3000 },
      compareMs: 3000,
      otherMs: 30_000 - (2000 + 4010 + 4200 + 11_500 + 3000),
    });
    expect(r.bootstrapMs).toBe(2500);
    expect(r.overlapping).toBe(false);
  });

  it('counts what the trials reused', () => {
    const r = multiplyPhases({ createdAt: at(0), finishedAt: at(30), trials });
    expect(r.reused).toEqual({
      unionFiles: { reused: 1, of: 3 },
      builtSamples: { reused: 1, of: 3 },
      models: { reused: 1, of: 6 },
    });
    expect(r.models[2].perSeedTrainMs).toEqual([
      { seed: 1, ms: 2000, cached: false },
      { seed: 2, ms: 1000, cached: true },
    ]);
  });

  it('flags trials that ran at the same time', () => {
    const overlapped = [...trials];
    overlapped[1] = { ...overlapped[1], startedAt: at(8) };
    expect(multiplyPhases({ createdAt: at(0), finishedAt: at(30), trials: overlapped }).overlapping).toBe(true);
  });

  it('reads trials of an older worker (no timings) as zero and refuses an unfinished experiment', () => {
    const old = trials.map((t) => ({ ...t, metrics: t.kind === 'train' ? { strategy: 'union', sources: [] } : null }));
    const r = multiplyPhases({ createdAt: at(0), finishedAt: at(30), trials: old });
    expect(r.phases.trainingMs).toEqual({ union: 0 });
    expect(r.bootstrapMs).toBeNull();
    expect(r.reused.models).toEqual({ reused: 0, of: 0 });
    expect(() => multiplyPhases({ createdAt: at(0), finishedAt: null, trials })).toThrow(/not finished/);
  });
});
