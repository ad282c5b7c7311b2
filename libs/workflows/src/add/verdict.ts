export type Verdict = 'adopt' | 'reject' | 'inconclusive';

/**
 * The verdict rule, on a candidate's AUC contribution interval [low, high] at level alpha:
 * - adopt when the whole interval is above 0 (a significant gain);
 * - reject when the whole interval is below minGain (any gain it might have is too small to matter,
 *   which includes a noise feature whose interval straddles 0 tightly);
 * - inconclusive otherwise (more data or repeats needed).
 */
export function verdictFor(ciLow: number, ciHigh: number, minGain: number): { verdict: Verdict; reason: string } {
  if (ciLow > 0) return { verdict: 'adopt', reason: `contribution interval [${fmt(ciLow)}, ${fmt(ciHigh)}] is above 0` };
  if (ciHigh < minGain)
    return {
      verdict: 'reject',
      reason: `contribution interval [${fmt(ciLow)}, ${fmt(ciHigh)}] is below the minimum gain ${minGain}`,
    };
  return {
    verdict: 'inconclusive',
    reason: `contribution interval [${fmt(ciLow)}, ${fmt(ciHigh)}] includes 0 and gains of at least ${minGain}`,
  };
}

function fmt(x: number): string {
  return x.toFixed(5);
}
