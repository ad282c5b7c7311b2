import type { TableColumn } from '@abacus/samples';

/**
 * A feature's binned distribution on one report's data, kept in the report so the next report can
 * bin its own data the same way and compute the PSI between the two.
 * - numeric: cut points at the deciles (deduplicated); bin i holds edges[i-1] <= v < edges[i];
 * - categorical: the most frequent values, then one bin for every other value;
 * - multi_id: the most frequent ids (each occurrence counts), then one bin for the others;
 * plus a bin for missing values (NaN, null category, empty list) in every kind.
 */
export type FeatureProfile =
  | { kind: 'numeric'; edges: number[]; counts: number[]; missing: number }
  | { kind: 'categorical'; values: string[]; counts: number[]; other: number; missing: number }
  | { kind: 'multi_id'; values: number[]; counts: number[]; other: number; missing: number };

export const PROFILE_BINS = 10;
export const PROFILE_TOP_VALUES = 20;

/** The counts PSI is computed over: every bin, then the other bin (if any), then missing. */
export function profileCounts(p: FeatureProfile): number[] {
  return p.kind === 'numeric' ? [...p.counts, p.missing] : [...p.counts, p.other, p.missing];
}

/** Index of the numeric bin of v: the number of cut points <= v. */
function numericBin(edges: number[], v: number): number {
  let lo = 0;
  let hi = edges.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (edges[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function topByCount<K>(counts: Map<K, number>, k: number, cmp: (a: K, b: K) => number): K[] {
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || cmp(a[0], b[0]))
    .slice(0, k)
    .map(([v]) => v);
}

/** The profile of a column of this report's data. */
export function profileColumn(col: TableColumn, bins = PROFILE_BINS, top = PROFILE_TOP_VALUES): FeatureProfile {
  if (col.kind === 'numeric') {
    const finite = Array.from(col.values).filter((v) => Number.isFinite(v));
    finite.sort((a, b) => a - b);
    const edges: number[] = [];
    for (let i = 1; i < bins && finite.length; i++) {
      const q = finite[Math.min(finite.length - 1, Math.floor((i * finite.length) / bins))];
      if (!edges.length || q > edges[edges.length - 1]) edges.push(q);
    }
    const p: FeatureProfile = { kind: 'numeric', edges, counts: new Array<number>(edges.length + 1).fill(0), missing: 0 };
    return { ...p, ...countNumeric(edges, col.values) };
  }
  if (col.kind === 'categorical') {
    const counts = new Map<string, number>();
    for (const c of col.codes) if (c >= 0) counts.set(col.dictionary[c], (counts.get(col.dictionary[c]) ?? 0) + 1);
    const values = topByCount(counts, top, (a, b) => a.localeCompare(b));
    return { kind: 'categorical', values, ...countCategorical(values, col) };
  }
  const counts = new Map<number, number>();
  for (const id of col.ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  const values = topByCount(counts, top, (a, b) => a - b);
  return { kind: 'multi_id', values, ...countMultiId(values, col) };
}

function countNumeric(edges: number[], values: Float64Array): { counts: number[]; missing: number } {
  const counts = new Array<number>(edges.length + 1).fill(0);
  let missing = 0;
  for (const v of values) {
    if (!Number.isFinite(v)) missing++;
    else counts[numericBin(edges, v)]++;
  }
  return { counts, missing };
}

function countCategorical(values: string[], col: Extract<TableColumn, { kind: 'categorical' }>) {
  const index = new Map(values.map((v, i) => [v, i]));
  const byCode = col.dictionary.map((d) => index.get(d) ?? -1);
  const counts = new Array<number>(values.length).fill(0);
  let other = 0;
  let missing = 0;
  for (const c of col.codes) {
    if (c < 0) missing++;
    else if (byCode[c] >= 0) counts[byCode[c]]++;
    else other++;
  }
  return { counts, other, missing };
}

function countMultiId(values: number[], col: Extract<TableColumn, { kind: 'multi_id' }>) {
  const index = new Map(values.map((v, i) => [v, i]));
  const counts = new Array<number>(values.length).fill(0);
  let other = 0;
  let missing = 0;
  for (let r = 0; r + 1 < col.offsets.length; r++) {
    if (col.offsets[r + 1] === col.offsets[r]) missing++;
    for (let j = col.offsets[r]; j < col.offsets[r + 1]; j++) {
      const i = index.get(col.ids[j]);
      if (i === undefined) other++;
      else counts[i]++;
    }
  }
  return { counts, other, missing };
}

/**
 * This report's column binned by an earlier report's profile (its cut points or values), in the
 * order of profileCounts; null when the feature changed kind in between (no PSI then).
 */
export function countOnProfile(p: FeatureProfile, col: TableColumn): number[] | null {
  if (p.kind !== col.kind) return null;
  if (p.kind === 'numeric' && col.kind === 'numeric') {
    const c = countNumeric(p.edges, col.values);
    return [...c.counts, c.missing];
  }
  if (p.kind === 'categorical' && col.kind === 'categorical') {
    const c = countCategorical(p.values, col);
    return [...c.counts, c.other, c.missing];
  }
  if (p.kind === 'multi_id' && col.kind === 'multi_id') {
    const c = countMultiId(p.values, col);
    return [...c.counts, c.other, c.missing];
  }
  return null;
}
