/**
 * Seeded PRNG: xoshiro128** (Blackman & Vigna) seeded through splitmix32, so every world is a pure
 * function of its seed. 32-bit integer math only (Math.imul), fast enough for millions of draws.
 */
export class Prng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  private spareNormal = NaN;

  constructor(seed: number) {
    let x = seed >>> 0 || 0x9e3779b9;
    const next = (): number => {
      // splitmix32: spreads a small seed over the 128-bit state
      x = (x + 0x9e3779b9) | 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
  }

  /** A derived, independent stream (for one table or one feature), so adding draws elsewhere does not shift it. */
  fork(salt: number): Prng {
    return new Prng((this.nextU32() ^ Math.imul(salt + 1, 0x27d4eb2d)) >>> 0);
  }

  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** uniform in [0, 1) with 32 bits of resolution */
  next(): number {
    return this.nextU32() * 2.3283064365386963e-10;
  }

  /** uniform integer in [0, n) */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** standard normal (Box–Muller, the second value cached) */
  normal(): number {
    if (!Number.isNaN(this.spareNormal)) {
      const v = this.spareNormal;
      this.spareNormal = NaN;
      return v;
    }
    let u = this.next();
    while (u <= 0) u = this.next();
    const r = Math.sqrt(-2 * Math.log(u));
    const theta = 2 * Math.PI * this.next();
    this.spareNormal = r * Math.sin(theta);
    return r * Math.cos(theta);
  }

  /** Poisson draw: Knuth's product method for small means, a rounded normal for large ones */
  poisson(lambda: number): number {
    if (lambda <= 0) return 0;
    if (lambda > 30) return Math.max(0, Math.round(lambda + Math.sqrt(lambda) * this.normal()));
    const limit = Math.exp(-lambda);
    let k = 0;
    let p = this.next();
    while (p > limit) {
      k++;
      p *= this.next();
    }
    return k;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
