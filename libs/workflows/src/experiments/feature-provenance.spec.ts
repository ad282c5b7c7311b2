import { describe, expect, it } from 'vitest';
import { featureVerdict } from './feature-provenance';

describe('featureVerdict', () => {
  it('score: IV and strength from the ranking', () => {
    const result = {
      ranking: [
        { rank: 1, feature: 'a', iv: 0.41, strength: 'strong', psi: 0.01 },
        { rank: 2, feature: 'b', iv: 0.01, strength: 'useless', psi: null },
      ],
    };
    expect(featureVerdict('score', 'succeeded', 'b', {}, result)).toEqual({
      verdict: 'useless',
      values: { iv: 0.01, rank: 2, of: 2, psi: null },
      detail: 'IV 0.0100 (useless), rank 2 of 2',
    });
  });

  it('subtract: removable or kept, with the shuffle drop and its interval', () => {
    const result = {
      removable: ['n'],
      kept: ['s'],
      perFeature: [
        { feature: 's', combinedRank: 1, iv: 0.5, shuffleDrop: 0.1234, shuffleCi: [0.1, 0.14], removable: false },
        { feature: 'n', combinedRank: 2, iv: 0, shuffleDrop: -0.0001, shuffleCi: [-0.001, 0.0008], removable: true },
      ],
    };
    const s = featureVerdict('subtract', 'succeeded', 's', {}, result);
    expect(s.verdict).toBe('kept');
    expect(s.detail).toBe('kept: AUC drop when shuffled 0.1234 [0.1000, 0.1400]');
    const n = featureVerdict('subtract', 'succeeded', 'n', {}, result);
    expect(n.verdict).toBe('removable');
    expect(n.values).toEqual({ shuffleDrop: -0.0001, shuffleCi: [-0.001, 0.0008], iv: 0, combinedRank: 2 });
  });

  it('add: a candidate gets its verdict and gain (leave-one-in first), a base feature says so', () => {
    const spec = { resolved: { base: ['x'], candidates: ['c', 'd'] } };
    const result = {
      candidates: [
        {
          feature: 'c',
          verdict: 'adopt',
          contribution: { mean: 0.02, ciLow: 0.01, ciHigh: 0.03 },
          leaveOneIn: null,
          evidence: 'shuffle',
        },
        {
          feature: 'd',
          verdict: 'reject',
          contribution: { mean: 0.001, ciLow: -0.001, ciHigh: 0.002 },
          leaveOneIn: { auc: 0.7, delta: -0.002, ciLow: -0.004, ciHigh: 0 },
          evidence: 'leave-one-in',
        },
      ],
    };
    expect(featureVerdict('add', 'succeeded', 'c', spec, result)).toEqual({
      verdict: 'adopt',
      values: { gain: 0.02, gainCi: [0.01, 0.03], evidence: 'shuffle' },
      detail: 'adopt: AUC gain 0.0200 [0.0100, 0.0300]',
    });
    expect(featureVerdict('add', 'succeeded', 'd', spec, result).values.gain).toBe(-0.002);
    expect(featureVerdict('add', 'succeeded', 'x', spec, result).verdict).toBe('base feature');
    // discover: its verified comparison (add's) is kept whole in its result
    const discovered = { chosen: [{ name: 'c', text: 'cross(a, b, buckets: 64)' }], verification: result };
    expect(featureVerdict('discover', 'succeeded', 'c', spec, discovered).verdict).toBe('adopt');
    expect(featureVerdict('discover', 'succeeded', 'x', spec, discovered).verdict).toBe('base feature');
    expect(featureVerdict('discover', 'succeeded', 'z', spec, { chosen: [] }).verdict).toBe('mentioned');
  });

  it('divide: the tiers that kept it; only the full model means dropped by every budget', () => {
    const result = {
      frontier: [
        { tier: 0, alias: 'tier-0', milp: { selected: ['a', 'b'] } },
        { tier: 1, alias: 'tier-1', milp: { selected: ['a'] } },
        { tier: 2, alias: 'tier-2', milp: { selected: [] } },
      ],
    };
    expect(featureVerdict('divide', 'succeeded', 'a', {}, result)).toMatchObject({
      verdict: 'in tiers',
      values: { tiers: ['tier-0', 'tier-1'], of: 3 },
    });
    expect(featureVerdict('divide', 'succeeded', 'b', {}, result)).toMatchObject({
      verdict: 'in no tier',
      values: { tiers: ['tier-0'] },
    });
  });

  it("multiply: a feature of the target model, with the experiment's best strategy", () => {
    const spec = { resolved: { target: { features: ['a'] } } };
    const v = featureVerdict('multiply', 'succeeded', 'a', spec, {
      best: { strategy: 'union', sources: ['search'], deltaAuc: 0.004 },
    });
    expect(v.verdict).toBe('used as a feature');
    expect(v.detail).toBe('a feature of the target model; best: union from search (ΔAUC 0.0040)');
    expect(featureVerdict('multiply', 'succeeded', 'a', spec, { best: null }).detail).toContain('no strategy recommended');
  });

  it('unfinished, failed, or a result without the feature', () => {
    expect(featureVerdict('score', 'running', 'a', {}, null).verdict).toBe('pending');
    expect(featureVerdict('add', 'failed', 'a', {}, null)).toEqual({
      verdict: 'no result',
      values: {},
      detail: 'the experiment failed without a result',
    });
    expect(
      featureVerdict('score', 'succeeded', 'zz', {}, { ranking: [{ feature: 'a', iv: 1, strength: 'strong' }] }).verdict,
    ).toBe('mentioned');
    // malformed shapes are read as absent, never thrown on
    expect(featureVerdict('subtract', 'succeeded', 'a', {}, { perFeature: 'x', removable: 3 }).verdict).toBe('mentioned');
    expect(featureVerdict('divide', 'succeeded', 'a', {}, { frontier: [null, { milp: 1 }] }).verdict).toBe('mentioned');
  });
});
