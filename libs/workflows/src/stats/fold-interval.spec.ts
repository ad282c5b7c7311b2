import { describe, expect, it } from 'vitest';
import { foldInterval, normalQuantile, tQuantile } from './fold-interval';

describe('quantiles', () => {
  it('normal quantile matches known values', () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959964, 5);
    expect(normalQuantile(0.995)).toBeCloseTo(2.575829, 5);
    expect(normalQuantile(0.5)).toBeCloseTo(0, 9);
    expect(normalQuantile(0.001)).toBeCloseTo(-3.090232, 5);
  });

  it('t quantile matches tables', () => {
    // t tables: t(9, .975) = 2.262157, t(4, .975) = 2.776445, t(29, .995) = 2.756386, t(1, .975) = 12.7062, t(2, .975) = 4.302653
    expect(tQuantile(9, 0.05)).toBeCloseTo(2.262157, 2);
    expect(tQuantile(4, 0.05)).toBeCloseTo(2.776445, 2);
    expect(tQuantile(29, 0.01)).toBeCloseTo(2.756386, 3);
    expect(tQuantile(1, 0.05)).toBeCloseTo(12.7062, 3);
    expect(tQuantile(2, 0.05)).toBeCloseTo(4.302653, 5);
    // Bonferroni-sized level: t(9, 1 - 0.0125/2) = 3.1103 (tables)
    expect(tQuantile(9, 0.0125)).toBeCloseTo(3.11, 2);
  });
});

describe('foldInterval', () => {
  it('is the t interval of the fold means', () => {
    const r = foldInterval([1, 2, 3, 4, 5], 0.05);
    // mean 3, sd sqrt(2.5), half width t(4,.975) * sd / sqrt(5) = 2.776445 * 0.707107 = 1.963243
    expect(r.mean).toBe(3);
    expect(r.ciLow).toBeCloseTo(3 - 1.963243, 2);
    expect(r.ciHigh).toBeCloseTo(3 + 1.963243, 2);
  });
});

describe('foldInterval coverage', () => {
  // add's leave-one-in verdict: per-fold gains that each carry row noise (variance 1) and seed noise
  // (variance s); the t interval over folds must keep its one-sided level whatever s is
  it('the lower end misses the true mean at about alpha / 2, for any mix of row and seed variance', () => {
    let state = 12345;
    const uniform = () => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) + 0.5) / 2 ** 32;
    const normal = () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
    const alpha = 0.025;
    const trials = 20_000;
    for (const s of [0, 1, 4]) {
      let misses = 0;
      for (let t = 0; t < trials; t++) {
        const gains = Array.from({ length: 10 }, () => normal() + Math.sqrt(s) * normal());
        if (foldInterval(gains, alpha).ciLow > 0) misses++;
      }
      // nominal 1.25%; the binomial sd at 20,000 trials is 0.08%
      expect(misses / trials).toBeGreaterThan(0.009);
      expect(misses / trials).toBeLessThan(0.016);
    }
  });
});
