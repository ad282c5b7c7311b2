import { MISSING_LABEL, OTHER_LABEL, UNSEEN_LABEL, type BinningOptions, type FittedBinning } from './binning.types';

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
  const minCount = opts.minCategoryShare * fitRows.length;
  const kept: number[] = [];
  const rare: number[] = [];
  for (let c = 0; c < k; c++) {
    if (count[c] === 0) continue;
    (count[c] >= minCount ? kept : rare).push(c);
  }
  kept.sort((a, b) => count[b] - count[a] || (dictionary[a] < dictionary[b] ? -1 : 1));
  const labels: (string | string[])[] = kept.map((c) => [dictionary[c]]);
  const binOfCode = new Int32Array(k + 1).fill(-1);
  kept.forEach((c, i) => (binOfCode[c] = i));
  const binCounts: number[] = kept.map((c) => count[c]);
  const binEvents: number[] = kept.map((c) => events[c]);
  let otherBin = -1;
  if (rare.length > 0) {
    otherBin = labels.length;
    labels.push([OTHER_LABEL, ...rare.map((c) => dictionary[c]).sort()]);
    binCounts.push(rare.reduce((s, c) => s + count[c], 0));
    binEvents.push(rare.reduce((s, c) => s + events[c], 0));
    for (const c of rare) binOfCode[c] = otherBin;
  }
  const missingBin = labels.length;
  labels.push(MISSING_LABEL);
  binCounts.push(count[k]);
  binEvents.push(events[k]);
  binOfCode[k] = missingBin;
  let unseenBin = otherBin;
  if (unseenBin < 0) {
    unseenBin = labels.length;
    labels.push([UNSEEN_LABEL]);
    binCounts.push(0);
    binEvents.push(0);
  }
  for (let c = 0; c < k; c++) if (binOfCode[c] < 0) binOfCode[c] = unseenBin;
  return {
    labels,
    counts: Float64Array.from(binCounts),
    events: Float64Array.from(binEvents),
    countRows(rows) {
      const out = new Float64Array(labels.length);
      for (const r of rows) out[binOfCode[codes[r] < 0 ? k : codes[r]]]++;
      return out;
    },
  };
}
