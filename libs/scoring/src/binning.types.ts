/** Bins fitted on the fit rows; `countRows` distributes other rows (the test range) over the same bins. */
export interface FittedBinning {
  labels: (string | string[])[];
  /** (weighted) rows per bin among the fit rows */
  counts: Float64Array;
  events: Float64Array;
  trend?: 'ascending' | 'descending';
  countRows(rows: Int32Array): Float64Array;
}

export interface BinningOptions {
  prebins: number;
  maxBins: number;
  minBinShare: number;
  minCategoryShare: number;
  minIdShare: number;
  smoothing: number;
}

export const MISSING_LABEL = 'Missing';
export const OTHER_LABEL = '__other__';
export const UNSEEN_LABEL = '__unseen__';
export const EMPTY_LABEL = '[empty]';
