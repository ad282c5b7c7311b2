import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Costs } from './divide-experiment.schema';
import { costOf, fits, greedySelect, interactionGroups, milpText, solveMilp, type SelectionProblem } from './selection';

/** the best selection by trying every subset of units */
function bruteForce(p: SelectionProblem): number {
  const grouped = new Set(p.groups.flat());
  const units = [...p.groups, ...p.features.filter((f) => !grouped.has(f)).map((f) => [f])];
  let best = 0;
  for (let mask = 0; mask < 1 << units.length; mask++) {
    const sel = units.filter((_, i) => mask & (1 << i)).flat();
    if (!fits(costOf(sel, p.costs), p.budget)) continue;
    best = Math.max(
      best,
      sel.reduce((s, f) => s + Math.max(0, p.values[f]), 0),
    );
  }
  return best;
}

const problem = fc
  .integer({ min: 1, max: 9 })
  .chain((n) =>
    fc.record({
      n: fc.constant(n),
      values: fc.array(fc.double({ min: -0.002, max: 0.05, noNaN: true }), { minLength: n, maxLength: n }),
      costs: fc.array(
        fc.record({
          storage: fc.integer({ min: 0, max: 64 }),
          communication: fc.integer({ min: 0, max: 6400 }),
          compute: fc.double({ min: 0, max: 3, noNaN: true }),
        }),
        { minLength: n, maxLength: n },
      ),
      fraction: fc.double({ min: 0.05, max: 1, noNaN: true }),
      pair: fc.option(fc.tuple(fc.integer({ min: 0, max: n - 1 }), fc.integer({ min: 0, max: n - 1 }))),
    }),
  )
  .map(({ n, values, costs, fraction, pair }): SelectionProblem => {
    const features = Array.from({ length: n }, (_, i) => `f${i}`);
    const c: Record<string, Costs> = Object.fromEntries(features.map((f, i) => [f, costs[i]]));
    const total = costOf(features, c);
    return {
      features,
      values: Object.fromEntries(features.map((f, i) => [f, values[i]])),
      costs: c,
      budget: {
        storage: total.storage * fraction,
        communication: total.communication * fraction,
        compute: total.compute * fraction,
      },
      groups: pair && pair[0] !== pair[1] ? [[`f${pair[0]}`, `f${pair[1]}`]] : [],
    };
  });

describe('feature selection under budgets', () => {
  it('the MILP finds the best subset (brute force), within budget, groups whole; greedy is feasible and no better', async () => {
    await fc.assert(
      fc.asyncProperty(problem, async (p) => {
        const m = await solveMilp(p);
        expect(m.status).toBe('Optimal');
        expect(m.gap).toBeLessThanOrEqual(1e-6);
        expect(fits(m.cost, p.budget)).toBe(true);
        expect(m.value).toBeCloseTo(bruteForce(p), 6);
        const g = greedySelect(p);
        expect(fits(g.cost, p.budget)).toBe(true);
        expect(g.value).toBeLessThanOrEqual(m.value + 1e-9);
        for (const s of [m.selected, g.selected]) {
          for (const grp of p.groups) expect(grp.every((f) => s.includes(f)) || grp.every((f) => !s.includes(f))).toBe(true);
        }
      }),
      { numRuns: 150, seed: 7 },
    );
  });

  it('writes one binary per unit and one row per resource with costs', () => {
    const { lp, vars } = milpText({
      features: ['a', 'b', 'c'],
      values: { a: 0.01, b: 0.02, c: -0.001 },
      costs: {
        a: { storage: 8, communication: 8, compute: 1 },
        b: { storage: 4, communication: 400, compute: 1 },
        c: { storage: 0, communication: 0, compute: 0 },
      },
      budget: { storage: 6, communication: 300, compute: 2 },
      groups: [['a', 'c']],
    });
    expect([...vars.values()]).toEqual([['a', 'c'], ['b']]);
    expect(lp).toContain('storage: + 8.00000000000 x0 + 4.00000000000 x1 <= 6.00000000000');
    expect(lp).toContain('Binary\n x0 x1');
  });
});

describe('interactionGroups', () => {
  it('joins pairs whose joint loss exceeds the sum of their own, transitively', () => {
    const values = { a: 0.01, b: 0.01, c: 0.0, d: 0.02, e: 0.0 };
    const groups = interactionGroups(
      [
        { a: 'a', b: 'b', jointCiLow: 0.05 }, // 0.05 > 0.02: interacts
        { a: 'b', b: 'c', jointCiLow: 0.011 }, // > 0.01
        { a: 'd', b: 'e', jointCiLow: 0.015 }, // < 0.02: no
      ],
      values,
    );
    expect(groups.map((g) => g.sort())).toEqual([['a', 'b', 'c']]);
  });
});
