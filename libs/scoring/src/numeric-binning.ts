import { MISSING_LABEL, type BinningOptions, type FittedBinning } from './binning.types';
import { computeWoe } from './woe-stats';

interface Bin {
  /** exclusive upper bound; Infinity for the last bin */
  upper: number;
  count: number;
  events: number;
  /** pre-bins pooled into this bin (consecutive), so that rows counted per pre-bin can be re-counted per bin */
  span: number;
}

const rate = (b: Bin): number => (b.count > 0 ? b.events / b.count : 0);

function mergeAt(bins: Bin[], i: number): void {
  bins[i] = {
    upper: bins[i + 1].upper,
    count: bins[i].count + bins[i + 1].count,
    events: bins[i].events + bins[i + 1].events,
    span: bins[i].span + bins[i + 1].span,
  };
  bins.splice(i + 1, 1);
}

/** index of the bin holding v, bins being [-inf, u0), [u0, u1), ... (binary search over uppers) */
export function binOf(uppers: Float64Array, v: number): number {
  let lo = 0;
  let hi = uppers.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (v < uppers[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function fmt(x: number): string {
  return String(Number(x.toPrecision(6)));
}

/** The ranks (0-based, into the sorted non-missing fit values) whose values decide the pre-binning cuts: 0 (the minimum) and floor(j*n/prebins). */
export function cutRanks(n: number, prebins: number): number[] {
  if (n === 0) return [];
  const ranks = [0];
  for (let j = 1; j < prebins; j++) ranks.push(Math.floor((j * n) / prebins));
  return ranks;
}

/**
 * Quantile pre-binning cut points: the distinct values at ranks floor(j*n/prebins), j = 1..prebins-1, of
 * the n sorted non-missing fit values, leaving out the minimum (never a cut). `valueAt(rank)` is asked
 * only for the ranks of cutRanks, so the values may come from a sort done elsewhere (in SQL).
 */
export function numericCuts(n: number, valueAt: (rank: number) => number, prebins: number): number[] {
  const cuts: number[] = [];
  if (n === 0) return cuts;
  const min = valueAt(0);
  for (let j = 1; j < prebins; j++) {
    const q = valueAt(Math.floor((j * n) / prebins));
    if (q > min && (cuts.length === 0 || q > cuts[cuts.length - 1])) cuts.push(q);
  }
  return cuts;
}

/** Rows of the fit range counted per pre-bin ([-inf, c0), [c0, c1), ..., [c_last, inf)) and in the missing bin. */
export interface NumericPreBins {
  cuts: number[];
  /** per pre-bin: cuts.length + 1 entries */
  counts: ArrayLike<number>;
  events: ArrayLike<number>;
  missingCount: number;
  missingEvents: number;
  /** all fit rows, missing included */
  fitRows: number;
  /** events of all fit rows, missing included */
  totalEvents: number;
}

export interface NumericBins {
  labels: string[];
  /** per bin, the missing bin last */
  counts: Float64Array;
  events: Float64Array;
  trend: 'ascending' | 'descending';
  /** exclusive upper bounds of the value bins (the last is Infinity) */
  uppers: Float64Array;
  /** the bin of each pre-bin */
  binOfPreBin: Int32Array;
}

/**
 * Steps 2-3 of fitNumericBinning on rows already counted per pre-bin: empty pre-bins folded away, bins
 * below minBinShare merged into the neighbour with the closer event rate, then per trend PAVA and
 * least-IV-loss merging down to maxBins; the trend with the larger IV wins. The missing bin stays apart.
 */
export function mergeNumericBins(pre: NumericPreBins, opts: BinningOptions): NumericBins {
  const { missingCount, missingEvents, totalEvents } = pre;
  const bins: Bin[] = [...pre.cuts, Infinity].map((upper, i) => ({
    upper,
    count: pre.counts[i],
    events: pre.events[i],
    span: 1,
  }));
  // empty pre-bins (possible with ties) are folded away first
  for (let i = bins.length - 1; i >= 0 && bins.length > 1; i--) {
    if (bins[i].count === 0) {
      if (i > 0) mergeAt(bins, i - 1);
      else mergeAt(bins, 0);
    }
  }
  const minCount = opts.minBinShare * pre.fitRows;
  for (;;) {
    if (bins.length <= 1) break;
    let smallest = -1;
    for (let i = 0; i < bins.length; i++) {
      if (bins[i].count < minCount && (smallest < 0 || bins[i].count < bins[smallest].count)) smallest = i;
    }
    if (smallest < 0) break;
    if (smallest === 0) mergeAt(bins, 0);
    else if (smallest === bins.length - 1) mergeAt(bins, smallest - 1);
    else {
      const left = Math.abs(rate(bins[smallest]) - rate(bins[smallest - 1]));
      const right = Math.abs(rate(bins[smallest]) - rate(bins[smallest + 1]));
      mergeAt(bins, left <= right ? smallest - 1 : smallest);
    }
  }

  const totalNonEvents = pre.fitRows - totalEvents;
  const ivOf = (bs: Bin[]): number => {
    const ev = [...bs.map((b) => b.events), missingEvents];
    const ne = [...bs.map((b) => b.count - b.events), missingCount - missingEvents];
    return computeWoe(ev, ne, opts.smoothing).iv;
  };
  const term = (count: number, events: number): number => {
    // IV term with 0.5 smoothing, used only to rank candidate merges
    const de = (events + 0.5) / (totalEvents + 0.5);
    const dn = (count - events + 0.5) / (totalNonEvents + 0.5);
    return (dn - de) * Math.log(dn / de);
  };
  const monotone = (trend: 'ascending' | 'descending'): Bin[] => {
    const stack: Bin[] = [];
    for (const b of bins) {
      stack.push({ ...b });
      while (stack.length >= 2) {
        const prev = stack[stack.length - 2];
        const cur = stack[stack.length - 1];
        const violates = trend === 'ascending' ? rate(prev) > rate(cur) : rate(prev) < rate(cur);
        if (!violates) break;
        mergeAt(stack, stack.length - 2);
      }
    }
    while (stack.length > opts.maxBins) {
      let best = 0;
      let bestLoss = Infinity;
      for (let i = 0; i + 1 < stack.length; i++) {
        const loss =
          term(stack[i].count, stack[i].events) +
          term(stack[i + 1].count, stack[i + 1].events) -
          term(stack[i].count + stack[i + 1].count, stack[i].events + stack[i + 1].events);
        if (loss < bestLoss) {
          bestLoss = loss;
          best = i;
        }
      }
      mergeAt(stack, best);
    }
    return stack;
  };
  const asc = monotone('ascending');
  const desc = monotone('descending');
  const useDesc = ivOf(desc) > ivOf(asc) + 1e-12;
  const final = useDesc ? desc : asc;

  const labels: string[] = final.map((b, i) => {
    const lo = i === 0 ? '(-inf' : `[${fmt(final[i - 1].upper)}`;
    const hi = b.upper === Infinity ? 'inf)' : `${fmt(b.upper)})`;
    return `${lo}, ${hi}`;
  });
  labels.push(MISSING_LABEL);
  const binOfPreBin = new Int32Array(pre.cuts.length + 1);
  let p = 0;
  final.forEach((b, i) => {
    for (let k = 0; k < b.span; k++) binOfPreBin[p++] = i;
  });
  return {
    labels,
    counts: Float64Array.from([...final.map((b) => b.count), missingCount]),
    events: Float64Array.from([...final.map((b) => b.events), missingEvents]),
    trend: useDesc ? 'descending' : 'ascending',
    uppers: Float64Array.from(final.map((b) => b.upper)),
    binOfPreBin,
  };
}

/**
 * Numeric binning in the optbinning style:
 * 1. quantile pre-binning: cut points = distinct values of the sorted non-missing fit values at ranks
 *    floor(j*n/prebins), j = 1..prebins-1 (the minimum is never a cut); bins are [a, b), right-open;
 * 2. bins below minBinShare of the fit rows are merged into the adjacent bin with the closer event rate;
 * 3. for each trend (event rate ascending / descending) adjacent violators are pooled (PAVA) until the
 *    rates are monotonic, then the adjacent pair losing the least IV is merged until at most maxBins remain;
 *    the trend with the larger IV wins (ties: ascending);
 * 4. missing values (NaN) get their own bin, outside the merging.
 */
export function fitNumericBinning(values: Float64Array, y: Uint8Array, fitRows: Int32Array, opts: BinningOptions): FittedBinning {
  const present: number[] = [];
  let missingCount = 0;
  let missingEvents = 0;
  let totalEvents = 0;
  for (const r of fitRows) {
    totalEvents += y[r];
    if (Number.isNaN(values[r])) {
      missingCount++;
      missingEvents += y[r];
    } else present.push(values[r]);
  }
  const sorted = Float64Array.from(present).sort();
  const cuts = numericCuts(sorted.length, (r) => sorted[r], opts.prebins);
  const preUppers = Float64Array.from([...cuts, Infinity]);
  const counts = new Float64Array(preUppers.length);
  const events = new Float64Array(preUppers.length);
  for (const r of fitRows) {
    const v = values[r];
    if (Number.isNaN(v)) continue;
    const b = binOf(preUppers, v);
    counts[b]++;
    events[b] += y[r];
  }
  const bins = mergeNumericBins(
    { cuts, counts, events, missingCount, missingEvents, fitRows: fitRows.length, totalEvents },
    opts,
  );
  const { labels, uppers } = bins;
  const missingBin = labels.length - 1;
  return {
    labels,
    counts: bins.counts,
    events: bins.events,
    trend: bins.trend,
    countRows(rows) {
      const out = new Float64Array(labels.length);
      for (const r of rows) {
        const v = values[r];
        out[Number.isNaN(v) ? missingBin : binOf(uppers, v)]++;
      }
      return out;
    },
  };
}
