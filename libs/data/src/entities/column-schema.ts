/** One column of an imported table as the platform sees it. */
export interface ColumnSchema {
  name: string;
  /** 'unsupported': a type with no feature reading (STRUCT, MAP, BLOB...); never a default feature */
  kind: 'numeric' | 'categorical' | 'multi_id' | 'unsupported';
  /** the storage type the reader reported (e.g. DOUBLE, VARCHAR, INTEGER[]) */
  sourceType: string;
}
