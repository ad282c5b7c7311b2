export interface RateInterval {
  k: number;
  n: number;
  rate: number;
  /** 95% Wilson score interval */
  ciLow: number;
  ciHigh: number;
}

/** k successes out of n with the 95% Wilson score interval (sound at rates near 0 or 1 and small n). */
export function wilsonInterval(k: number, n: number, z = 1.959963984540054): RateInterval {
  if (n === 0) return { k, n, rate: NaN, ciLow: 0, ciHigh: 1 };
  const p = k / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return { k, n, rate: p, ciLow: Math.max(0, centre - half), ciHigh: Math.min(1, centre + half) };
}
