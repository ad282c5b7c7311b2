import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FoldEstimate } from '../stats/fold-interval';
import { nextRetrainChecks, pruneScan, type PruneScanSettings } from './prune-scan';

/** a deterministic number in [0, 1) of a string (a world's "truth" about a set) */
const u = (salt: number, s: string) => createHash('sha256').update(`${salt}:${s}`).digest().readUInt32LE(0) / 2 ** 32;

/** A made-up world: permutation estimates, retraining verdicts and correlations, fixed per set by a salt. */
function world(salt: number, maxDrop: number) {
  const estimate = async (set: string[]): Promise<FoldEstimate> => {
    const mean = (u(salt, `m${set.join('|')}`) - 0.3) * 0.01;
    const half = u(salt, `w${set.join('|')}`) * 0.01;
    return { mean, std: half / 2, ciLow: mean - half, ciHigh: mean + half, folds: 10 };
  };
  const verdict = (set: string[]) => u(salt, `r${[...set].sort().join('|')}`) < 0.5;
  const correlations = async (names: string[]) =>
    names
      .flatMap((a, i) => names.slice(i + 1).map((b) => ({ a, b, r: u(salt, `c${a}|${b}`) })))
      .sort((x, y) => y.r - x.r);
  return { estimate, verdict, correlations, maxDrop };
}

/** The scan run for real against the world: the retraining checks it asked for, in order, and its result. */
async function run(s: PruneScanSettings, w: ReturnType<typeof world>) {
  const asked: { set: string[]; verdict: boolean }[] = [];
  const permutations: string[][] = [];
  const result = await pruneScan(s, {
    permutation: async (set) => {
      permutations.push(set);
      const e = await w.estimate(set);
      return { ok: e.mean <= w.maxDrop, estimate: e };
    },
    retrain: async (set) => {
      const verdict = w.verdict(set);
      asked.push({ set, verdict });
      return verdict;
    },
    correlations: w.correlations,
    progress: async () => undefined,
  });
  return { asked, permutations, result };
}

const settings = fc
  .record({
    n: fc.integer({ min: 2, max: 14 }),
    batchSize: fc.integer({ min: 1, max: 5 }),
    retrainScanBelow: fc.constantFrom(0.002, 0.005, 0.01),
    redundancyThreshold: fc.constantFrom(0.7, 0.9, 1),
    salt: fc.integer({ min: 0, max: 1_000_000 }),
  })
  .filter((x) => x.batchSize < x.n)
  .map((x) => {
    const names = Array.from({ length: x.n }, (_, i) => `f${String(i).padStart(2, '0')}`);
    // the ranking: the names in an order fixed by the salt
    const order = [...names].sort((a, b) => u(x.salt, `o${a}`) - u(x.salt, `o${b}`));
    return {
      s: {
        names,
        order,
        batchSize: x.batchSize,
        retrainScanBelow: x.retrainScanBelow,
        redundancyThreshold: x.redundancyThreshold,
        useRetrain: true,
      } satisfies PruneScanSettings,
      salt: x.salt,
    };
  });

const key = (set: string[]) => [...set].sort().join('|');

describe('pruneScan lookahead', () => {
  it('the check asked for after each retraining check is among the ones looked ahead at (1 and 2 verdicts deep)', async () => {
    await fc.assert(
      fc.asyncProperty(settings, async ({ s, salt }) => {
        const w = world(salt, 0.001);
        const { asked } = await run(s, w);
        for (let k = 0; k < asked.length; k++) {
          const verdicts = asked.slice(0, k).map((a) => a.verdict);
          const one = (await nextRetrainChecks(s, w.estimate, w.correlations, w.maxDrop, verdicts, 1)).map(key);
          const two = (await nextRetrainChecks(s, w.estimate, w.correlations, w.maxDrop, verdicts, 2)).map(key);
          expect(one.length).toBeLessThanOrEqual(2);
          expect(two.length).toBeLessThanOrEqual(6);
          if (k + 1 < asked.length) {
            expect(one).toContain(key(asked[k + 1].set));
            expect(two).toContain(key(asked[k + 1].set));
          }
          if (k + 2 < asked.length) expect(two).toContain(key(asked[k + 2].set));
          // looking ahead from the last check finds nothing past the scan's end on its actual verdict
          if (k === asked.length - 1) {
            const after = await nextRetrainChecks(s, w.estimate, w.correlations, w.maxDrop, [...verdicts, asked[k].verdict], 1);
            expect(after.length).toBeLessThanOrEqual(2);
          }
        }
      }),
      { numRuns: 150 },
    );
  });

  it('looking ahead records nothing and leaves the scan as it was', async () => {
    await fc.assert(
      fc.asyncProperty(settings, async ({ s, salt }) => {
        const w = world(salt, 0.001);
        const plain = await run(s, w);
        let recorded = 0;
        const verdicts: boolean[] = [];
        const result = await pruneScan(s, {
          permutation: async (set) => {
            recorded += 1;
            const e = await w.estimate(set);
            return { ok: e.mean <= w.maxDrop, estimate: e };
          },
          retrain: async (set) => {
            await nextRetrainChecks(s, w.estimate, w.correlations, w.maxDrop, verdicts, 2);
            const v = w.verdict(set);
            verdicts.push(v);
            return v;
          },
          correlations: w.correlations,
          progress: async () => undefined,
        });
        expect(result).toEqual(plain.result);
        expect(recorded).toBe(plain.permutations.length);
        expect(verdicts).toEqual(plain.asked.map((a) => a.verdict));
      }),
      { numRuns: 100 },
    );
  });

  it('follows the pruning order: rounds while accepted, the rejected batch one at a time, then the rest', async () => {
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    const s: PruneScanSettings = {
      names,
      order: names,
      batchSize: 2,
      retrainScanBelow: 0.01,
      redundancyThreshold: 1,
      useRetrain: true,
    };
    // permutation: sets holding c or d are beyond maxDrop (with f: wholly beyond retrainScanBelow);
    // retraining accepts whatever lacks d
    const permutations: string[][] = [];
    const retrains: string[][] = [];
    const { accepted } = await pruneScan(s, {
      permutation: async (set) => {
        permutations.push(set);
        const bad = set.includes('c') || set.includes('d');
        const low = set.includes('f') ? 0.02 : bad ? 0.004 : -0.001;
        return { ok: !bad, estimate: { mean: bad ? 0.03 : 0, std: 0, ciLow: low, ciHigh: 0.04, folds: 10 } };
      },
      retrain: async (set) => {
        retrains.push(set);
        return !set.includes('d');
      },
      correlations: async () => [],
      progress: async () => undefined,
    });
    // the top batch (e, f) is never a round of its own: a round never leaves fewer than batchSize features
    expect(permutations).toEqual([
      ['a', 'b'],
      ['a', 'b', 'c', 'd'],
      ['a', 'b', 'c'],
      ['a', 'b', 'c', 'd'],
      ['a', 'b', 'c', 'e'],
      ['a', 'b', 'c', 'e', 'f'],
    ]);
    // the round (c, d) is rejected by retraining, c alone accepted, d not; e accepted by retraining;
    // f kept on its estimate alone; then the whole accepted set is retrained once
    expect(retrains).toEqual([
      ['a', 'b', 'c', 'd'],
      ['a', 'b', 'c'],
      ['a', 'b', 'c', 'd'],
      ['a', 'b', 'c', 'e'],
      ['a', 'b', 'c', 'e'],
    ]);
    expect(accepted).toEqual(['a', 'b', 'c', 'e']);
  });
});
