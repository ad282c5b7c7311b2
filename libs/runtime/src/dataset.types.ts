import type { NativeShardHandle } from './binding';

/** One sparse slot in CSR form: ids of row r are ids[offsets[r] .. offsets[r+1]); ids < 0 are padding. */
export interface SlotColumn {
  name: string;
  ids: Int32Array;
  /** rows + 1 entries, offsets[0] = 0, non-decreasing */
  offsets: Int32Array;
}

/**
 * In-memory columnar samples. Arrays are handed to the native code without copying: do not
 * mutate them while an operation that uses them runs.
 */
export interface ColumnarDataset {
  kind?: 'columnar';
  rows: number;
  /** column names of `numeric`, in order */
  numericNames: string[];
  /** rows x numericNames.length, row-major */
  numeric: Float32Array;
  slots: SlotColumn[];
  labels: Float32Array;
  /** optional per-sample loss weights */
  weights?: Float32Array;
  /** optional integer key columns (for group AUC), one value per row */
  keys?: Record<string, Int32Array>;
}

/**
 * Samples in shard files, memory-mapped and read by the native code (never loaded into JS). A view
 * may take a row range of a shard (`start`, `rows`); the rows are the shards' in order. The native
 * code releases the pages it has read behind it, so a set far larger than memory can be trained on.
 */
export interface ShardDataset {
  kind: 'shards';
  rows: number;
  numericNames: string[];
  slots: { name: string; vocab?: number }[];
  keys: string[];
  hasWeights: boolean;
  /** per-row loss weights of this view (its rows, in order), given beside the shards: they override the shards' own */
  weights?: Float32Array;
  /** `rows` of the shard from `start` (default 0); `total` is the shard's own row count */
  shards: { path: string; rows: number; start?: number; total?: number; handle: NativeShardHandle }[];
}

export type RuntimeData = ColumnarDataset | ShardDataset;

export function isShardDataset(d: RuntimeData): d is ShardDataset {
  return (d as ShardDataset).kind === 'shards';
}
