import { describe, expect, it } from 'vitest';
import { addCandidates, baseFeatures, budgetTiers } from './bench-plan';

const catalog = [
  { name: 'a_strong', effect: 0.45 },
  { name: 'a_copy', effect: 0 },
  { name: 'b_weak', effect: 0.1 },
  { name: 'b_noise', effect: 0 },
  { name: 'c_strong', effect: 0.5 },
  { name: 'c_weak', effect: 0.12 },
];
const names = catalog.map((f) => f.name);

describe('baseFeatures', () => {
  it('takes the catalog in order, then noise columns to make up the count', () => {
    expect(baseFeatures(names, 3)).toEqual(['a_strong', 'a_copy', 'b_weak']);
    expect(baseFeatures(names, 8)).toEqual([...names, 'bench_noise_1', 'bench_noise_2']);
  });
});

describe('addCandidates', () => {
  it("takes the simulator's features with an effect the base leaves out, strongest first, then noise", () => {
    const base = baseFeatures(names, 2);
    expect(addCandidates(catalog, base, 5)).toEqual({
      names: ['c_strong', 'c_weak', 'b_weak', 'bench_noise_1', 'bench_noise_2'],
      simulator: ['c_strong', 'c_weak', 'b_weak'],
      noise: ['bench_noise_1', 'bench_noise_2'],
      noiseColumns: 2,
    });
    // fewer candidates than real features left: the strongest
    expect(addCandidates(catalog, base, 2).names).toEqual(['c_strong', 'c_weak']);
  });

  it("numbers its noise columns after the base model's own when the base has taken the whole catalog", () => {
    const base = baseFeatures(names, 8);
    expect(addCandidates(catalog, base, 3)).toEqual({
      names: ['bench_noise_3', 'bench_noise_4', 'bench_noise_5'],
      simulator: [],
      noise: ['bench_noise_3', 'bench_noise_4', 'bench_noise_5'],
      noiseColumns: 5,
    });
  });
});

describe('budgetTiers', () => {
  it("is the divide spec's default for 4 tiers, and decreases from 1 for any count", () => {
    expect(budgetTiers(4)).toEqual([1, 0.7, 0.5, 0.3]);
    expect(budgetTiers(2)).toEqual([1, 0.5]);
    expect(budgetTiers(3)).toEqual([1, 0.7, 0.3]);
    for (let n = 1; n <= 8; n++) {
      const t = budgetTiers(n);
      expect(t).toHaveLength(n);
      expect(t[0]).toBe(1);
      for (let i = 1; i < n; i++) expect(t[i]).toBeLessThan(t[i - 1]);
    }
    expect(() => budgetTiers(0)).toThrow();
  });
});
