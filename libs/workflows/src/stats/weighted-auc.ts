/**
 * Ranking helpers for paired bootstrap of AUC: sort once, then each replicate's AUC is a weighted
 * pass over the fixed order (ties share their weight half-and-half), O(n) per replicate.
 */
export interface RankedScores {
  order: Uint32Array;
  /** start index (in `order`) of each group of tied scores, plus n at the end */
  tieStarts: Uint32Array;
}

export function rankScores(scores: Float32Array): RankedScores {
  const n = scores.length;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((a, b) => scores[a] - scores[b] || a - b);
  const starts: number[] = [];
  for (let i = 0; i < n; i++) if (i === 0 || scores[order[i]] !== scores[order[i - 1]]) starts.push(i);
  starts.push(n);
  return { order, tieStarts: Uint32Array.from(starts) };
}

/** AUC with per-row weights (bootstrap counts); NaN when a class has no weight. */
export function weightedAuc(r: RankedScores, labels: Float32Array, w: Float64Array | Uint16Array): number {
  let negBelow = 0;
  let num = 0;
  let pos = 0;
  let neg = 0;
  for (let g = 0; g + 1 < r.tieStarts.length; g++) {
    let gp = 0;
    let gn = 0;
    for (let k = r.tieStarts[g]; k < r.tieStarts[g + 1]; k++) {
      const i = r.order[k];
      if (labels[i] > 0.5) gp += w[i];
      else gn += w[i];
    }
    num += gp * (negBelow + 0.5 * gn);
    negBelow += gn;
    pos += gp;
    neg += gn;
  }
  return pos > 0 && neg > 0 ? num / (pos * neg) : NaN;
}

export function weightedLogloss(pred: Float32Array, labels: Float32Array, w: Float64Array | Uint16Array): number {
  let s = 0;
  let tw = 0;
  for (let i = 0; i < pred.length; i++) {
    if (!w[i]) continue;
    const p = Math.min(1 - 1e-7, Math.max(1e-7, pred[i]));
    s -= w[i] * (labels[i] > 0.5 ? Math.log(p) : Math.log(1 - p));
    tw += w[i];
  }
  return s / tw;
}
