import type { DerivedTruth } from './derived-effects';
/** Shapes shared by the simulator, the table reader, the runtime's tests and the scorers. */

export type FeatureKind = 'numeric' | 'categorical' | 'multi_id';
export type FeatureRole = 'strong' | 'weak' | 'redundant' | 'noise';
export type EntityTable = 'user' | 'item' | 'context';

export interface FeatureCosts {
  /** bytes stored per entity row */
  storageBytesPerEntity: number;
  /** bytes fetched from the feature store per scoring request */
  fetchBytesPerRequest: number;
  /** relative compute cost per request (1 = one numeric lookup) */
  computeCost: number;
}

export interface GroundTruthFeature {
  name: string;
  table: EntityTable;
  kind: FeatureKind;
  role: FeatureRole;
  /** planted effect size on the click logit (std of its contribution); 0 for noise */
  effect: number;
  /** for role 'redundant': the feature it is a noisy copy of */
  copyOf?: string;
  /** vocabulary size for categorical / multi-id features (ids are 0..vocab-1) */
  vocab?: number;
  costs: FeatureCosts;
  /** business lines whose base model config includes this feature */
  inConfigOf: string[];
}

export interface GroundTruthDomain {
  name: string;
  impressions: number;
  clickRate: number;
  /** test AUC of the true planted logit on this line's test split: the best any model can reach */
  upperBoundTestAuc: number;
  /**
   * true for the opt-in line (`unrelatedLine`) whose planted effects are unrelated to the other lines':
   * borrowing its samples should not help them. Absent on the related lines.
   */
  unrelated?: true;
}

export interface GroundTruth {
  seed: number;
  /** impressions of the related lines (the `rows` option); an unrelated line's come on top (see `domains`) */
  rows: number;
  /** impressions with ts >= testFrom are the test split */
  testFrom: number;
  domains: GroundTruthDomain[];
  features: GroundTruthFeature[];
  /** effects only an expression carries (simulateWorld's derivedEffects) */
  derived?: DerivedTruth[];
}

/** A flat, already-joined sample table, ready for the runtime (one row per impression). */
export interface FlatSamples {
  rows: number;
  numeric: { name: string; values: Float32Array }[];
  /** single-id slots: one id per row, -1 = missing */
  categorical: { name: string; ids: Int32Array; vocab: number }[];
  /** multi-id slots: CSR layout, ids of row r are ids[offsets[r] .. offsets[r+1]) */
  multiId: { name: string; offsets: Int32Array; ids: Int32Array; vocab: number }[];
  label: Float32Array;
  /** seconds since the world's epoch */
  time: Float64Array;
  domain: string[];
  /** 0 = train, 1 = test (by time: ts >= testFrom) */
  split: Uint8Array;
  /** the planted logit that generated the label */
  trueLogit: Float32Array;
}
