import type { FeatureKind } from '../simulator/world.types';

export interface NumericTableColumn {
  name: string;
  kind: 'numeric';
  duckdbType: string;
  /** NaN = null */
  values: Float64Array;
}
export interface CategoricalTableColumn {
  name: string;
  kind: 'categorical';
  duckdbType: string;
  /** index into `dictionary`, -1 = null */
  codes: Int32Array;
  /** distinct non-null values (as strings), in order of first appearance */
  dictionary: string[];
}
export interface MultiIdTableColumn {
  name: string;
  kind: 'multi_id';
  duckdbType: string;
  /** CSR: ids of row r are ids[offsets[r] .. offsets[r+1]); a null list is an empty list; null elements are dropped */
  offsets: Int32Array;
  ids: Int32Array;
}
export type TableColumn = NumericTableColumn | CategoricalTableColumn | MultiIdTableColumn;

export interface Table {
  file: string;
  rowCount: number;
  columns: TableColumn[];
}

export interface TableSchemaColumn {
  name: string;
  /** 'unsupported' for types with no feature reading (STRUCT, MAP, BLOB, lists of non-integers ...) */
  kind: FeatureKind | 'unsupported';
  duckdbType: string;
}

export interface TableSchema {
  file: string;
  format: 'csv' | 'parquet';
  rowCount: number;
  columns: TableSchemaColumn[];
}
