import type { FeatureKind } from '@abacus/samples';

export interface BinScore {
  /** numeric: "[a, b)" interval (or "Missing"); categorical / multi-id: the values pooled in the bin */
  range_or_values: string | string[];
  /** rows in the bin (multi-id: weighted, each row spreads weight 1 over its ids) */
  count: number;
  events: number;
  woe: number;
  /** this bin's IV term */
  iv: number;
}

export interface FeatureScore {
  name: string;
  kind: FeatureKind;
  iv: number;
  /** population stability of the test range against the train range, over the train bins */
  psi?: number;
  /** numeric only: direction of the event rate over the merged bins */
  trend?: 'ascending' | 'descending';
  bins: BinScore[];
}

export interface IvReport {
  label: string;
  positive: string;
  woeConvention: string;
  smoothing: string;
  rows: { fit: number; test?: number };
  events: number;
  features: FeatureScore[];
}
