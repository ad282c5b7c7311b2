import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Prng } from '@abacus/samples';
import { pairedSeedBootstrap, pairedSeedBootstrapAsync } from './paired-bootstrap';

/** labels and K predictions per side; `levels` > 0 rounds the scores to that many values (many ties) */
function world(n: number, k: number, seed: number, levels: number, positiveRate: number, special = false) {
  const rng = new Prng(seed);
  const labels = Float32Array.from({ length: n }, () => (rng.next() < positiveRate ? 1 : 0));
  const side = (noise: number) =>
    Array.from({ length: k }, () =>
      Float32Array.from(labels, (y) => {
        const s = 1 / (1 + Math.exp(-(y * 1.5 - 0.75 + noise * (rng.next() * 2 - 1))));
        const u = rng.next();
        // now and then the extremes a model can give: ±0 (equal), ±Infinity
        if (special && u < 0.02) return [0, -0, Infinity, -Infinity][Math.floor(u * 200)];
        return levels > 0 ? Math.round(s * levels) / levels : s;
      }),
    );
  return { labels, a: side(2), b: side(1) };
}

describe('pairedSeedBootstrapAsync: the native replicates', () => {
  it('are the JS loop’s bit for bit: any rows, seeds, ties, class balance and thread count', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 3000 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.constantFrom(0, 3, 20),
        fc.constantFrom(0.5, 0.05, 0.002),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 1, max: 40 }),
        fc.boolean(),
        async (n, k, seed, levels, rate, threads, replicates, special) => {
          const { labels, a, b } = world(n, k, seed ^ 0x5a5a, levels, rate, special);
          const opts = { replicates, seed, alpha: 0.1 };
          const js = pairedSeedBootstrap(labels, a, b, opts);
          const native = await pairedSeedBootstrapAsync(labels, a, b, { ...opts, threads });
          expect(native).toEqual(js);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('gives the JS loop’s numbers for a diverged model’s NaN predictions too', async () => {
    const { labels, a, b } = world(500, 2, 9, 0, 0.3);
    b[1] = b[1].map((x, i) => (i % 7 === 0 ? NaN : x));
    const opts = { replicates: 30, seed: 4, alpha: 0.1 };
    expect(await pairedSeedBootstrapAsync(labels, a, b, opts)).toEqual(pairedSeedBootstrap(labels, a, b, opts));
  });

  it('rejects sides of different sizes and predictions of another length, as the JS loop does', async () => {
    const { labels, a, b } = world(100, 2, 1, 0, 0.3);
    await expect(pairedSeedBootstrapAsync(labels, a, b.slice(0, 1), { replicates: 5, seed: 1, alpha: 0.1 })).rejects.toThrow(
      /same number of seeds/,
    );
    await expect(
      pairedSeedBootstrapAsync(labels, a, [b[0], b[1].subarray(1)], { replicates: 5, seed: 1, alpha: 0.1 }),
    ).rejects.toThrow(/differ in length/);
  });
});
