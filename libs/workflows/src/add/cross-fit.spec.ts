import { describe, expect, it } from 'vitest';
import { crossFitGain } from './compare-trial.handler';

/** Scores whose AUC on the labels is about `auc` (a separation of the two classes' score means). */
function fold(n: number, seed: number, shift: number) {
  let s = seed >>> 0;
  const rnd = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const labels = Float32Array.from({ length: n }, () => (rnd() < 0.3 ? 1 : 0));
  const noise = Float32Array.from({ length: n }, () => rnd() + rnd() + rnd() - 1.5);
  const pred = (sep: number) => Float32Array.from(noise, (x, i) => x + sep * labels[i]! + 0.2 * (rnd() - 0.5));
  return {
    base: { validation: { pred: pred(0.5), labels } },
    run: { validation: { pred: pred(0.5 + shift), labels } },
  };
}

describe('crossFitGain', () => {
  it('t interval over the per-fold gains, validation split, both variances covered', () => {
    const folds = Array.from({ length: 10 }, (_, k) => fold(3000, 100 + k, 0.15));
    const g = crossFitGain(
      folds.map((f) => f.base),
      folds.map((f) => f.run),
      folds.map((_, k) => 1 + k),
      0.05,
    );
    expect(g.split).toBe('validation');
    expect(g.covers).toEqual(['evaluation rows', 'training seeds']);
    expect(g.perSeed).toHaveLength(10);
    expect(g.df).toBe(9);
    expect(g.mean).toBeCloseTo(g.perSeed.reduce((a, b) => a + b, 0) / 10, 12);
    expect(g.mean).toBeGreaterThan(0.01);
    expect(g.ciLow).toBeGreaterThan(0);
    expect(g.ciLow).toBeLessThan(g.mean);
    expect(g.ciHigh - g.mean).toBeCloseTo(g.mean - g.ciLow, 12);
    expect(g.foldRows).toEqual(Array(10).fill(3000));
  });

  it('a candidate that changes nothing gets an interval around 0', () => {
    const folds = Array.from({ length: 6 }, (_, k) => fold(2000, 7 + k, 0));
    const g = crossFitGain(
      folds.map((f) => f.base),
      folds.map((f) => f.run),
      folds.map((_, k) => k),
      0.05,
    );
    expect(g.ciLow).toBeLessThan(0);
    expect(g.ciHigh).toBeGreaterThan(0);
  });

  it('refuses unpaired folds', () => {
    const a = fold(100, 1, 0);
    const b = fold(120, 2, 0);
    expect(() => crossFitGain([a.base, b.base], [a.run, a.run], [1, 2], 0.05)).toThrow(/fold 1/);
    expect(() => crossFitGain([a.base], [a.run], [1], 0.05)).toThrow(/two seeds/);
  });
});
