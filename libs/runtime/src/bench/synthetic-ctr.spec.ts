import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../tfjs-backend';
import { zipfSampler } from './synthetic-ctr';

/** The inverse CDF searched over every id: what the guide table must reproduce. */
function fullSearch(vocab: number, alpha: number, r: () => number): () => number {
  const cdf = new Float64Array(vocab);
  let acc = 0;
  for (let k = 0; k < vocab; k++) cdf[k] = acc += 1 / Math.pow(k + 1, alpha);
  return () => {
    const u = r() * acc;
    let lo = 0,
      hi = vocab - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

describe('zipfSampler', () => {
  it('draws the same ids as a search of the whole CDF, for small and large vocabularies', () => {
    for (const [vocab, alpha, seed] of [
      [1, 1.05, 1],
      [7, 0.8, 2],
      [1000, 1.05, 3],
      [(1 << 20) + 17, 1.05, 4],
      [3_000_000, 1.2, 5],
    ] as const) {
      const a = zipfSampler(vocab, alpha, mulberry32(seed));
      const b = fullSearch(vocab, alpha, mulberry32(seed));
      let same = 0;
      const n = 20_000;
      for (let i = 0; i < n; i++) if (a() === b()) same++;
      expect(same, `vocab ${vocab}`).toBe(n);
    }
  });
});
