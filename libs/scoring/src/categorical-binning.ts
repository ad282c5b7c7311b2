import { MISSING_LABEL, OTHER_LABEL, UNSEEN_LABEL, type BinningOptions, type FittedBinning } from './binning.types';

/** Categorical bins fitted from per-value counts; `binOfValue[v]` places value v (fit or test only). */
export interface CategoricalBins {
  labels: (string | string[])[];
  counts: Float64Array;
  events: Float64Array;
  binOfValue: Int32Array;
  missingBin: number;
}

/**
 * The categorical binning of fitCategoricalBinning from fit rows counted per distinct value (`count[v]`,
 * `events[v]`; a value with count 0 occurs only outside the fit rows) and in the missing bin. The result
 * depends on the values and their counts, not on their order.
 */
export function categoricalBinsFromCounts(
  values: readonly string[],
  count: ArrayLike<number>,
  events: ArrayLike<number>,
  missing: { count: number; events: number },
  fitRows: number,
  opts: BinningOptions,
): CategoricalBins {
  const k = values.length;
  const minCount = opts.minCategoryShare * fitRows;
  const kept: number[] = [];
  const rare: number[] = [];
  for (let c = 0; c < k; c++) {
    if (count[c] === 0) continue;
    (count[c] >= minCount ? kept : rare).push(c);
  }
  kept.sort((a, b) => count[b] - count[a] || (values[a] < values[b] ? -1 : 1));
  const labels: (string | string[])[] = kept.map((c) => [values[c]]);
  const binOfValue = new Int32Array(k).fill(-1);
  kept.forEach((c, i) => (binOfValue[c] = i));
  const binCounts: number[] = kept.map((c) => count[c]);
  const binEvents: number[] = kept.map((c) => events[c]);
  let otherBin = -1;
  if (rare.length > 0) {
    otherBin = labels.length;
    labels.push([OTHER_LABEL, ...rare.map((c) => values[c]).sort()]);
    binCounts.push(rare.reduce((s, c) => s + count[c], 0));
    binEvents.push(rare.reduce((s, c) => s + events[c], 0));
    for (const c of rare) binOfValue[c] = otherBin;
  }
  const missingBin = labels.length;
  labels.push(MISSING_LABEL);
  binCounts.push(missing.count);
  binEvents.push(missing.events);
  let unseenBin = otherBin;
  if (unseenBin < 0) {
    unseenBin = labels.length;
    labels.push([UNSEEN_LABEL]);
    binCounts.push(0);
    binEvents.push(0);
  }
  for (let c = 0; c < k; c++) if (binOfValue[c] < 0) binOfValue[c] = unseenBin;
  return { labels, counts: Float64Array.from(binCounts), events: Float64Array.from(binEvents), binOfValue, missingBin };
}

/**
 * One bin per category seen in the fit rows (ordered by count, descending), plus a missing bin (code -1).
 * With minCategoryShare > 0, categories rarer than that share of the fit rows are pooled into "__other__".
 * Categories absent from the fit rows (met only in the test range) go to "__other__" if it exists, else to
 * "__unseen__" (a bin with no fit rows: it matters for PSI only).
 */
export function fitCategoricalBinning(
  codes: Int32Array,
  dictionary: string[],
  y: Uint8Array,
  fitRows: Int32Array,
  opts: BinningOptions,
): FittedBinning {
  const k = dictionary.length;
  const count = new Float64Array(k + 1); // last slot: missing
  const events = new Float64Array(k + 1);
  for (const r of fitRows) {
    const c = codes[r] < 0 ? k : codes[r];
    count[c]++;
    events[c] += y[r];
  }
  const bins = categoricalBinsFromCounts(dictionary, count, events, { count: count[k], events: events[k] }, fitRows.length, opts);
  const { labels, binOfValue, missingBin } = bins;
  return {
    labels,
    counts: bins.counts,
    events: bins.events,
    countRows(rows) {
      const out = new Float64Array(labels.length);
      for (const r of rows) out[codes[r] < 0 ? missingBin : binOfValue[codes[r]]]++;
      return out;
    },
  };
}
