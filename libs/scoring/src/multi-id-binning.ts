import { EMPTY_LABEL, OTHER_LABEL, UNSEEN_LABEL, type BinningOptions, type FittedBinning } from './binning.types';

/**
 * Multi-id (list) features: every id is a category and each row spreads a total weight of 1 over its
 * list, i.e. each (row, id) pair counts 1/len for rows and y/len for events; a row with an empty (or null)
 * list counts 1 in the "[empty]" bin. So every row weighs the same as in a single-valued feature and the
 * distributions still sum to 1. Ids whose weighted count is below minIdShare of the fit rows are pooled
 * into "__other__"; ids absent from the fit rows go to "__other__" (or "__unseen__").
 */
export function fitMultiIdBinning(
  offsets: Int32Array,
  ids: Int32Array,
  y: Uint8Array,
  fitRows: Int32Array,
  opts: BinningOptions,
): FittedBinning {
  const count = new Map<number, number>();
  const events = new Map<number, number>();
  let emptyCount = 0;
  let emptyEvents = 0;
  for (const r of fitRows) {
    const lo = offsets[r];
    const hi = offsets[r + 1];
    if (hi === lo) {
      emptyCount++;
      emptyEvents += y[r];
      continue;
    }
    const w = 1 / (hi - lo);
    for (let k = lo; k < hi; k++) {
      const id = ids[k];
      count.set(id, (count.get(id) ?? 0) + w);
      events.set(id, (events.get(id) ?? 0) + w * y[r]);
    }
  }
  const minCount = opts.minIdShare * fitRows.length;
  const kept = [...count.keys()].filter((id) => count.get(id)! >= minCount);
  const rare = [...count.keys()].filter((id) => count.get(id)! < minCount).sort((a, b) => a - b);
  kept.sort((a, b) => count.get(b)! - count.get(a)! || a - b);
  const labels: (string | string[])[] = kept.map((id) => [String(id)]);
  const binOf = new Map<number, number>(kept.map((id, i) => [id, i]));
  const binCounts = kept.map((id) => count.get(id)!);
  const binEvents = kept.map((id) => events.get(id)!);
  let fallback = -1;
  if (rare.length > 0) {
    fallback = labels.length;
    // long tails are summarised: the label lists at most 20 of the pooled ids
    labels.push([OTHER_LABEL, ...rare.slice(0, 20).map(String), ...(rare.length > 20 ? [`(+${rare.length - 20} more)`] : [])]);
    binCounts.push(rare.reduce((s, id) => s + count.get(id)!, 0));
    binEvents.push(rare.reduce((s, id) => s + events.get(id)!, 0));
    for (const id of rare) binOf.set(id, fallback);
  }
  const emptyBin = labels.length;
  labels.push(EMPTY_LABEL);
  binCounts.push(emptyCount);
  binEvents.push(emptyEvents);
  if (fallback < 0) {
    fallback = labels.length;
    labels.push([UNSEEN_LABEL]);
    binCounts.push(0);
    binEvents.push(0);
  }
  return {
    labels,
    counts: Float64Array.from(binCounts),
    events: Float64Array.from(binEvents),
    countRows(rows) {
      const out = new Float64Array(labels.length);
      for (const r of rows) {
        const lo = offsets[r];
        const hi = offsets[r + 1];
        if (hi === lo) {
          out[emptyBin]++;
          continue;
        }
        const w = 1 / (hi - lo);
        for (let k = lo; k < hi; k++) out[binOf.get(ids[k]) ?? fallback] += w;
      }
      return out;
    },
  };
}
