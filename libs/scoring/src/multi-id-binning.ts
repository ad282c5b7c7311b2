import { EMPTY_LABEL, OTHER_LABEL, UNSEEN_LABEL, type BinningOptions, type FittedBinning } from './binning.types';

/**
 * (row, id) pairs counted per id and list length. The weighted count of an id is the sum over its list
 * lengths, shortest first, of pairs/len (and events/len): a fixed order of summation, so the same pairs
 * give the same floats whether they were counted row by row or aggregated in SQL.
 */
export class IdPairCounts {
  private readonly byId = new Map<number, Map<number, [number, number]>>();

  add(id: number, len: number, pairs: number, events: number): void {
    let byLen = this.byId.get(id);
    if (!byLen) this.byId.set(id, (byLen = new Map()));
    const c = byLen.get(len);
    if (c) {
      c[0] += pairs;
      c[1] += events;
    } else byLen.set(len, [pairs, events]);
  }

  /** per id: its weighted count and events */
  weighted(): Map<number, { count: number; events: number }> {
    const out = new Map<number, { count: number; events: number }>();
    for (const [id, byLen] of this.byId) {
      let count = 0;
      let events = 0;
      for (const len of [...byLen.keys()].sort((a, b) => a - b)) {
        const [p, e] = byLen.get(len)!;
        count += p / len;
        events += e / len;
      }
      out.set(id, { count, events });
    }
    return out;
  }
}

/** Multi-id bins fitted from weighted per-id counts; `binOfId` places an id (fit or test only). */
export interface MultiIdBins {
  labels: (string | string[])[];
  counts: Float64Array;
  events: Float64Array;
  binOfId(id: number): number;
  emptyBin: number;
}

/**
 * The multi-id binning of fitMultiIdBinning from the fit rows' weighted per-id counts (IdPairCounts)
 * and their rows with an empty list.
 */
export function multiIdBinsFromCounts(
  weighted: Map<number, { count: number; events: number }>,
  empty: { count: number; events: number },
  fitRows: number,
  opts: BinningOptions,
): MultiIdBins {
  const count = (id: number) => weighted.get(id)!.count;
  const minCount = opts.minIdShare * fitRows;
  const kept = [...weighted.keys()].filter((id) => count(id) >= minCount);
  const rare = [...weighted.keys()].filter((id) => count(id) < minCount).sort((a, b) => a - b);
  kept.sort((a, b) => count(b) - count(a) || a - b);
  const labels: (string | string[])[] = kept.map((id) => [String(id)]);
  const binOf = new Map<number, number>(kept.map((id, i) => [id, i]));
  const binCounts = kept.map((id) => count(id));
  const binEvents = kept.map((id) => weighted.get(id)!.events);
  let fallback = -1;
  if (rare.length > 0) {
    fallback = labels.length;
    // long tails are summarised: the label lists at most 20 of the pooled ids
    labels.push([OTHER_LABEL, ...rare.slice(0, 20).map(String), ...(rare.length > 20 ? [`(+${rare.length - 20} more)`] : [])]);
    binCounts.push(rare.reduce((s, id) => s + count(id), 0));
    binEvents.push(rare.reduce((s, id) => s + weighted.get(id)!.events, 0));
    for (const id of rare) binOf.set(id, fallback);
  }
  const emptyBin = labels.length;
  labels.push(EMPTY_LABEL);
  binCounts.push(empty.count);
  binEvents.push(empty.events);
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
    binOfId: (id) => binOf.get(id) ?? fallback,
    emptyBin,
  };
}

/** Other rows (the test range) over fitted multi-id bins, ids added in ascending order. */
export function countOnMultiIdBins(bins: MultiIdBins, pairs: IdPairCounts, emptyRows: number): Float64Array {
  const out = new Float64Array(bins.labels.length);
  out[bins.emptyBin] = emptyRows;
  const weighted = pairs.weighted();
  for (const id of [...weighted.keys()].sort((a, b) => a - b)) out[bins.binOfId(id)] += weighted.get(id)!.count;
  return out;
}

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
  const pairsOf = (rows: Int32Array, withEvents: boolean) => {
    const pairs = new IdPairCounts();
    let emptyCount = 0;
    let emptyEvents = 0;
    for (const r of rows) {
      const lo = offsets[r];
      const hi = offsets[r + 1];
      const ev = withEvents ? y[r] : 0;
      if (hi === lo) {
        emptyCount++;
        emptyEvents += ev;
      } else for (let k = lo; k < hi; k++) pairs.add(ids[k], hi - lo, 1, ev);
    }
    return { pairs, empty: { count: emptyCount, events: emptyEvents } };
  };
  const fit = pairsOf(fitRows, true);
  const bins = multiIdBinsFromCounts(fit.pairs.weighted(), fit.empty, fitRows.length, opts);
  return {
    labels: bins.labels,
    counts: bins.counts,
    events: bins.events,
    countRows(rows) {
      const other = pairsOf(rows, false);
      return countOnMultiIdBins(bins, other.pairs, other.empty.count);
    },
  };
}
