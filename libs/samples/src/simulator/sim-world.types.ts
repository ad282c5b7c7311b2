import type { DerivedColumns } from './derived-effects';
import type { FlatSamples, GroundTruth } from './world.types';

/** numeric column, NaN = missing */
export interface NumericColumn {
  name: string;
  values: Float64Array;
}
/** categorical column: ids 0..vocab-1, -1 = missing */
export interface CategoricalColumn {
  name: string;
  ids: Int32Array;
  vocab: number;
}
/** multi-id column in CSR layout: ids of row r are ids[offsets[r] .. offsets[r+1]) */
export interface MultiIdColumn {
  name: string;
  offsets: Int32Array;
  ids: Int32Array;
  vocab: number;
}

/** A feature table keyed by entity id; `snapshotTs` set for tables with daily snapshots (users). */
export interface EntityTableColumns {
  name: 'users' | 'items' | 'contexts';
  /** key column name in the files: user_id / item_id / context_id */
  key: string;
  rows: number;
  keys: Int32Array;
  /** snapshot time (seconds since epoch) of each row: valid for impressions with ts >= snapshotTs */
  snapshotTs?: Float64Array;
  numeric: NumericColumn[];
  categorical: CategoricalColumn[];
  multiId: MultiIdColumn[];
}

/**
 * The labelled impression log, sorted by time (an unrelated line's rows, if any, follow the others', sorted
 * among themselves); row r is also row r of `flat`.
 */
export interface ImpressionTable {
  rows: number;
  impressionId: Int32Array;
  /** seconds since the world's epoch */
  ts: Float64Array;
  /** index into `domains` */
  domainIndex: Uint8Array;
  domains: string[];
  userId: Int32Array;
  itemId: Int32Array;
  contextId: Int32Array;
  click: Uint8Array;
  /** the derived effects' columns (simulateWorld's derivedEffects) */
  derived?: DerivedColumns;
}

export interface SimWorld {
  groundTruth: GroundTruth;
  flat: FlatSamples;
  impressions: ImpressionTable;
  users: EntityTableColumns;
  items: EntityTableColumns;
  contexts: EntityTableColumns;
}
