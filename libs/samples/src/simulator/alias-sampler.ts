import type { Prng } from './prng';

/** Walker's alias method: O(1) draws from a fixed discrete distribution (users by activity, items by popularity). */
export class AliasSampler {
  private readonly prob: Float64Array;
  private readonly alias: Int32Array;

  constructor(weights: ArrayLike<number>) {
    const n = weights.length;
    if (n === 0) throw new Error('AliasSampler needs at least one weight');
    let total = 0;
    for (let i = 0; i < n; i++) total += weights[i];
    this.prob = new Float64Array(n);
    this.alias = new Int32Array(n);
    const scaled = new Float64Array(n);
    const small: number[] = [];
    const large: number[] = [];
    for (let i = 0; i < n; i++) {
      scaled[i] = (weights[i] * n) / total;
      (scaled[i] < 1 ? small : large).push(i);
    }
    while (small.length > 0 && large.length > 0) {
      const s = small.pop()!;
      const l = large.pop()!;
      this.prob[s] = scaled[s];
      this.alias[s] = l;
      scaled[l] = scaled[l] + scaled[s] - 1;
      (scaled[l] < 1 ? small : large).push(l);
    }
    for (const i of large) this.prob[i] = 1;
    for (const i of small) this.prob[i] = 1; // numerical leftovers
  }

  sample(rng: Prng): number {
    const n = this.prob.length;
    const u = rng.next() * n;
    const i = Math.min(n - 1, Math.floor(u));
    return u - i < this.prob[i] ? i : this.alias[i];
  }
}
