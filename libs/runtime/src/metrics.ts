/** Offline metrics: exact AUC (ties count one half), weighted logloss, calibration, group AUC. */
export interface MetricSet {
  auc: number;
  logloss: number;
  /** mean prediction / mean label (1 = calibrated) */
  calibration: number;
  meanPrediction: number;
  meanLabel: number;
}

export function exactAuc(pred: Float32Array, label: Float32Array): number {
  let np = 0;
  for (let i = 0; i < label.length; i++) if (label[i]! > 0.5) np++;
  const nn = label.length - np;
  if (np === 0 || nn === 0) return NaN;
  const pos = new Float32Array(np),
    neg = new Float32Array(nn);
  for (let i = 0, a = 0, b = 0; i < label.length; i++) {
    // a diverged model's NaN predictions have no ranking
    if (!Number.isFinite(pred[i]!)) return NaN;
    if (label[i]! > 0.5) pos[a++] = pred[i]!;
    else neg[b++] = pred[i]!;
  }
  pos.sort();
  neg.sort();
  // for each positive: negatives strictly below + half of the equal ones
  let wins = 0;
  let lo = 0,
    hi = 0;
  for (let i = 0; i < np; i++) {
    const p = pos[i]!;
    while (lo < nn && neg[lo]! < p) lo++;
    if (hi < lo) hi = lo;
    while (hi < nn && neg[hi]! <= p) hi++;
    wins += lo + 0.5 * (hi - lo);
  }
  return wins / (np * nn);
}

export function computeMetrics(pred: Float32Array, label: Float32Array, weight?: Float32Array): MetricSet {
  let ll = 0,
    ws = 0,
    sp = 0,
    sl = 0;
  for (let i = 0; i < pred.length; i++) {
    const w = weight ? weight[i]! : 1;
    const p = Math.min(Math.max(pred[i]!, 1e-7), 1 - 1e-7);
    const y = label[i]!;
    ll -= w * (y * Math.log(p) + (1 - y) * Math.log(1 - p));
    ws += w;
    sp += w * pred[i]!;
    sl += w * y;
  }
  return {
    auc: exactAuc(pred, label),
    logloss: ll / ws,
    calibration: sl > 0 ? sp / sl : NaN,
    meanPrediction: sp / ws,
    meanLabel: sl / ws,
  };
}

/** Impression-weighted mean of per-group AUC over groups that have both classes. */
export function groupAuc(
  pred: Float32Array,
  label: Float32Array,
  key: Int32Array,
): { value: number; groups: number; rowsCovered: number } {
  const order = Array.from({ length: key.length }, (_, i) => i).sort((a, b) => key[a]! - key[b]!);
  let total = 0,
    wsum = 0,
    groups = 0;
  for (let i = 0; i < order.length;) {
    let j = i;
    while (j < order.length && key[order[j]!] === key[order[i]!]) j++;
    const idx = order.slice(i, j);
    const p = new Float32Array(idx.map((k) => pred[k]!)),
      l = new Float32Array(idx.map((k) => label[k]!));
    const a = exactAuc(p, l);
    if (!Number.isNaN(a)) {
      total += a * idx.length;
      wsum += idx.length;
      groups++;
    }
    i = j;
  }
  return { value: wsum > 0 ? total / wsum : NaN, groups, rowsCovered: wsum };
}
