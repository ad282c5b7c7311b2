/**
 * Exact, tie-aware ROC AUC (Mann–Whitney U / (P*N)); a tied positive/negative pair counts 1/2.
 * Sorts positives and negatives separately (native typed-array sort) and sweeps once: O(n log n).
 * `mask` (optional) selects the rows to include. Returns NaN when one class is absent.
 */
export function exactAuc(scores: ArrayLike<number>, labels: ArrayLike<number>, mask?: (row: number) => boolean): number {
  let nPos = 0;
  let nNeg = 0;
  for (let r = 0; r < scores.length; r++) {
    if (mask && !mask(r)) continue;
    if (labels[r] > 0.5) nPos++;
    else nNeg++;
  }
  if (nPos === 0 || nNeg === 0) return NaN;
  const pos = new Float64Array(nPos);
  const neg = new Float64Array(nNeg);
  let p = 0;
  let q = 0;
  for (let r = 0; r < scores.length; r++) {
    if (mask && !mask(r)) continue;
    if (labels[r] > 0.5) pos[p++] = scores[r];
    else neg[q++] = scores[r];
  }
  pos.sort();
  neg.sort();
  // for each positive: negatives strictly below + half of the negatives equal to it
  let below = 0;
  let equal = 0;
  let last = NaN;
  let wins = 0;
  for (let i = 0; i < nPos; i++) {
    const s = pos[i];
    if (s !== last) {
      while (below < nNeg && neg[below] < s) below++;
      equal = 0;
      while (below + equal < nNeg && neg[below + equal] === s) equal++;
      last = s;
    }
    wins += below + equal / 2;
  }
  return wins / (nPos * nNeg);
}
