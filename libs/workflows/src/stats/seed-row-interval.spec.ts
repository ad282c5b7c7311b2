import { describe, expect, it } from 'vitest';
import { tQuantile } from './fold-interval';
import { seedRowInterval } from './seed-row-interval';

describe('seedRowInterval', () => {
  it('is a t interval over seeds when the rows add no error', () => {
    const d = [0.001, 0.003, 0.002];
    const r = seedRowInterval(d, 0, 0.05);
    expect(r.df).toBe(2);
    expect(r.mean).toBeCloseTo(0.002, 12);
    // sd 0.001, se 0.001/sqrt(3), t(2) = 4.303
    expect(r.ciHigh - r.mean).toBeCloseTo((tQuantile(2, 0.05) * 0.001) / Math.sqrt(3), 10);
  });

  it('is a normal interval on the rows when the seeds agree', () => {
    const r = seedRowInterval([0.004, 0.004, 0.004], 0.001, 0.05);
    expect(r.df).toBe(1000);
    expect(r.ciLow).toBeCloseTo(0.004 - 1.96 * 0.001, 4);
  });

  it('adds both variances, with degrees of freedom between the two', () => {
    const r = seedRowInterval([0.0, 0.002, 0.004, 0.006], 0.001, 0.05);
    // deviations from the mean 0.003: ±0.003, ±0.001, so the sum of squares is 20e-6
    const seedSe = Math.sqrt(20e-6 / 3 / 4);
    expect(r.seedSe).toBeCloseTo(seedSe, 10);
    expect(r.df).toBeGreaterThanOrEqual(3);
    expect(r.df).toBeLessThan(1000);
    const half = r.ciHigh - r.mean;
    expect(half).toBeGreaterThan(1.96 * Math.sqrt(seedSe ** 2 + 0.001 ** 2));
    expect(r.covers).toEqual(['evaluation rows', 'training seeds']);
  });
});
