/**
 * Population stability index of `actual` (test) against `expected` (train) counts over the same bins:
 *   PSI = sum_i (a_i - e_i) * ln(a_i / e_i),  e_i = expected share, a_i = actual share.
 * Bins empty in both samples are skipped; if a bin is empty in one sample, `smoothing` is added to every
 * remaining bin's count in both: share_i = (c_i + s) / (n + s*k).
 */
export function psi(expected: ArrayLike<number>, actual: ArrayLike<number>, smoothing = 0.5): number {
  if (expected.length !== actual.length) throw new Error(`psi: ${expected.length} expected bins vs ${actual.length} actual bins`);
  let k = 0;
  let nE = 0;
  let nA = 0;
  let zero = false;
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] + actual[i] <= 0) continue;
    k++;
    nE += expected[i];
    nA += actual[i];
    if (expected[i] <= 0 || actual[i] <= 0) zero = true;
  }
  if (nE <= 0 || nA <= 0) return NaN;
  const s = zero ? smoothing : 0;
  let total = 0;
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] + actual[i] <= 0) continue;
    const e = (expected[i] + s) / (nE + s * k);
    const a = (actual[i] + s) / (nA + s * k);
    if (e <= 0 || a <= 0) continue;
    total += (a - e) * Math.log(a / e);
  }
  return total;
}
