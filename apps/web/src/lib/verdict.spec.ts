import { describe, expect, it } from 'vitest';
import { verdictOf } from './verdict';

describe('verdictOf', () => {
  it('subtract: the removable features and the confirmed drop against the limit', () => {
    const v = verdictOf('subtract', {
      features: 4,
      removable: ['noise', 'weak'],
      maxDrop: 0.005,
      confirmed: { auc: 0.81234, aucDrop: 0.0012, withinLimit: true },
    });
    expect(v).toEqual({
      headline: '2 of 4 features can be removed: noise, weak',
      detail: 'Confirmed by retraining: AUC 0.8123 without them, a drop of 0.0012 — within the limit of 0.005.',
      tone: 'good',
    });
    expect(verdictOf('subtract', { features: 3, removable: [], maxDrop: 0.001, confirmed: null })).toEqual({
      headline: 'No feature can be removed within the limit (max AUC drop 0.001)',
      detail: null,
      tone: 'neutral',
    });
    expect(
      verdictOf('subtract', {
        features: 3,
        removable: ['a'],
        maxDrop: 0.001,
        confirmed: { auc: 0.7, aucDrop: 0.01, withinLimit: false },
      })?.tone,
    ).toBe('bad');
  });

  it('add and multiply: grouped by verdict', () => {
    expect(
      verdictOf('add', {
        candidates: [
          { feature: 'x', verdict: 'adopt' },
          { feature: 'y', verdict: 'reject' },
          { feature: 'z', verdict: 'inconclusive' },
        ],
      }),
    ).toEqual({ headline: 'Adopt x', detail: 'adopt: x; inconclusive: z; reject: y', tone: 'good' });
    expect(
      verdictOf('multiply', {
        results: [
          { strategy: 'union', sources: ['feed'], verdict: 'recommend' },
          { strategy: 'union', sources: ['ads'], verdict: 'harmful' },
        ],
      }),
    ).toEqual({
      headline: 'Borrowing helps: 1 strategy recommended',
      detail: 'recommend: union · feed; harmful: union · ads',
      tone: 'good',
    });
  });

  it('divide tiers and score ranking', () => {
    expect(verdictOf('divide', { frontier: [{ tier: 1, alias: 'tier-1', milp: { features: 5, liftKept: 0.98 } }] })?.detail).toBe(
      'tier-1: 5 features, 98% of the lift',
    );
    expect(
      verdictOf('score', {
        ranking: [
          { feature: 'a', iv: 0.41, strength: 'strong' },
          { feature: 'b', iv: 0.01 },
        ],
      })?.headline,
    ).toBe('Most informative: a (IV 0.410, strong), b (IV 0.010)');
  });

  it('unreadable results give null, never a throw', () => {
    for (const [kind, r] of [
      ['subtract', null],
      ['subtract', { removable: 'x' }],
      ['add', { candidates: [1, null] }],
      ['multiply', {}],
      ['divide', { frontier: [] }],
      ['score', { ranking: [{}] }],
      ['other', { a: 1 }],
    ] as const)
      expect(verdictOf(kind, r)).toBeNull();
  });
});
