import type { FlatSamples } from '@abacus/samples';

import type { ColumnarDataset } from './dataset.types';

export interface FlatSamplesAdapterOptions {
  /** 0 = train rows, 1 = test rows; default all */
  split?: 0 | 1;
  /** keep only this business line's rows */
  domain?: string;
  /** numeric / categorical / multi-id names to keep (default: all) */
  include?: string[];
}

/**
 * Simulator / sample-builder output (FlatSamples) -> runtime dataset. Categorical columns become
 * single-id slots (-1 = missing = padding). Adds a `domain` key column (index into `domains`).
 */
export function flatSamplesToDataset(flat: FlatSamples, opts: FlatSamplesAdapterOptions = {}): { dataset: ColumnarDataset; numeric: string[]; slots: { name: string; vocab: number }[]; domains: string[] } {
  const keep = opts.include ? new Set(opts.include) : null;
  const rows: number[] = [];
  for (let r = 0; r < flat.rows; r++) {
    if (opts.split !== undefined && flat.split[r] !== opts.split) continue;
    if (opts.domain !== undefined && flat.domain[r] !== opts.domain) continue;
    rows.push(r);
  }
  const n = rows.length;
  const numCols = flat.numeric.filter((c) => !keep || keep.has(c.name));
  const numeric = new Float32Array(n * numCols.length);
  rows.forEach((r, i) => numCols.forEach((c, j) => (numeric[i * numCols.length + j] = c.values[r]!)));
  const slots: ColumnarDataset['slots'] = [];
  const vocab: { name: string; vocab: number }[] = [];
  for (const c of flat.categorical) {
    if (keep && !keep.has(c.name)) continue;
    const offsets = new Int32Array(n + 1);
    const ids = new Int32Array(n);
    rows.forEach((r, i) => {
      ids[i] = c.ids[r]!;
      offsets[i + 1] = i + 1;
    });
    slots.push({ name: c.name, ids, offsets });
    vocab.push({ name: c.name, vocab: c.vocab });
  }
  for (const c of flat.multiId) {
    if (keep && !keep.has(c.name)) continue;
    const offsets = new Int32Array(n + 1);
    let nnz = 0;
    rows.forEach((r, i) => {
      nnz += c.offsets[r + 1]! - c.offsets[r]!;
      offsets[i + 1] = nnz;
    });
    const ids = new Int32Array(nnz);
    rows.forEach((r, i) => ids.set(c.ids.subarray(c.offsets[r]!, c.offsets[r + 1]!), offsets[i]!));
    slots.push({ name: c.name, ids, offsets });
    vocab.push({ name: c.name, vocab: c.vocab });
  }
  const domains = [...new Set(flat.domain)].sort();
  const domainKey = Int32Array.from(rows, (r) => domains.indexOf(flat.domain[r]!));
  return {
    dataset: { rows: n, numericNames: numCols.map((c) => c.name), numeric, slots, labels: Float32Array.from(rows, (r) => flat.label[r]!), keys: { domain: domainKey } },
    numeric: numCols.map((c) => c.name),
    slots: vocab,
    domains,
  };
}
