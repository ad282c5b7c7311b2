export type Verdict = 'adopt' | 'reject' | 'inconclusive';

/**
 * The verdict rule, on a candidate's AUC gain estimate and its interval [low, high] at level alpha:
 * - adopt when the interval is above 0 (statistically significant) AND the estimate is at least
 *   minGain (practically significant: minGain is the point of indifference, so a candidate whose
 *   true gain is minGain is adopted about half the time, one clearly above it almost always);
 * - reject when the whole interval is below minGain (any gain it might have is too small to matter);
 * - inconclusive otherwise (a significant gain smaller than minGain, or too little evidence).
 * `lower bound > minGain` would be the stricter alternative; it treats minGain as a null to reject and
 * adopts a candidate with a true gain of twice minGain only when the interval is narrower than minGain.
 */
export function verdictFor(
  estimate: number,
  ciLow: number,
  ciHigh: number,
  minGain: number,
): { verdict: Verdict; reason: string } {
  const iv = `[${fmt(ciLow)}, ${fmt(ciHigh)}]`;
  if (ciLow > 0 && estimate >= minGain)
    return { verdict: 'adopt', reason: `gain ${fmt(estimate)} is at least ${minGain} and its interval ${iv} is above 0` };
  if (ciHigh < minGain) return { verdict: 'reject', reason: `gain interval ${iv} is below the minimum gain ${minGain}` };
  if (ciLow > 0)
    return {
      verdict: 'inconclusive',
      reason: `gain ${fmt(estimate)} is significant (${iv}) but below the minimum gain ${minGain}`,
    };
  return { verdict: 'inconclusive', reason: `gain interval ${iv} includes 0 and gains of at least ${minGain}` };
}

function fmt(x: number): string {
  return x.toFixed(5);
}
