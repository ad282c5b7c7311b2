import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export type FeatureKind = 'numeric' | 'categorical' | 'multi_id';

export interface FeatureTransform {
  type: 'none' | 'hash' | 'buckets' | 'log' | 'standardize';
  hashBuckets?: number;
  boundaries?: number[];
}

/** Where a feature's values live: once per request (user, context) or once per candidate (item). */
export type FeatureEntityLevel = 'user' | 'item' | 'context';

/** One measured figure of the cost ledger: the value, when it was measured and how. */
export interface CostMeasurement {
  value: number;
  /** ISO time of the measurement */
  measuredAt: string;
  /** e.g. "mean 8.0 bytes over 10,000 rows of table users" */
  how: string;
  /** compute only: relative spread of the full model's timings, (max - min) / min */
  spread?: number;
  /** compute only: the share the fitted cost model gives the input, and its 95 % bootstrap interval */
  median?: number;
  interval?: [number, number];
  /** compute only: the smallest share the measurement could tell from 0 (the median interval half-width) */
  resolution?: number;
  /** compute only: the share was under the resolution or the interval reached 0; `value` is then 0 */
  belowResolution?: boolean;
  /** communication only: the fan-out the value was computed with */
  fanOut?: number;
}

export interface FeatureCostsRecord {
  /** declared (by the owner) unless `source` is 'measured'; declared figures override measured ones */
  storageBytesPerEntity?: number;
  fetchBytesPerRequest?: number;
  computeCost?: number;
  /** measured by the platform or declared by the owner (of the three figures above) */
  source?: 'measured' | 'declared';
  /** declared entity level; else inferred from the entity key (see docs/guide/cost-ledger.md) */
  entity?: FeatureEntityLevel;
  /** when the declared figures were last set */
  declaredAt?: string;
  /** the platform's measurements, kept beside the declared figures */
  measured?: { storage?: CostMeasurement; communication?: CostMeasurement; compute?: CostMeasurement };
}

/** Where a feature was measured and what it gave: the evidence the add workflow recommends from. */
export interface FeatureProvenance {
  businessLine: string;
  experimentId?: string;
  model?: string;
  metric: string;
  gain: number;
  ciLow?: number;
  ciHigh?: number;
  /** the split gain and interval were measured on (validation: the decision's evidence); older entries: test */
  split?: 'validation' | 'test';
  verdict?: string;
  /** the reported gain on the untouched test split */
  test?: { gain: number; ciLow: number; ciHigh: number };
  measuredAt: string;
}

/**
 * A feature defined by an expression over a sample set's columns and its earlier rows (the expression
 * language of @abacus/samples: docs/guide/feature-expressions.md).
 */
export interface FeatureExpressionRecord {
  /** the expression as registered (references to other features kept) */
  ast: Record<string, unknown>;
  /** its text form */
  text: string;
  /** the sample set it was checked against when registered */
  sampleSetId: string;
  sampleSet: string;
  /** raw columns, referenced features and aggregates it reads; historySeconds null: all earlier rows */
  lineage: {
    columns: string[];
    refs: string[];
    /** feature-table features it reads (as of each impression), with their table */
    tables?: { feature: string; table: string }[];
    windows: Record<string, unknown>[];
    readsLabel: boolean;
    outcomes: string[];
    historySeconds: number | null;
  };
}

@Entity({ name: 'features' })
@Index(['businessLine', 'name'], { unique: true })
export class FeatureEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'business_line', type: 'text' })
  businessLine!: string;

  @Column({ type: 'text' })
  owner!: string;

  @Column({ type: 'text' })
  kind!: FeatureKind;

  @Column({ type: 'text', default: '' })
  description!: string;

  @Column({ name: 'feature_table_id', type: 'uuid', nullable: true })
  featureTableId!: string | null;

  @Column({ name: 'source_table', type: 'text', nullable: true })
  sourceTable!: string | null;

  @Column({ name: 'source_column', type: 'text', nullable: true })
  sourceColumn!: string | null;

  @Column({ name: 'entity_key', type: 'text', nullable: true })
  entityKey!: string | null;

  @Column({ type: 'jsonb', default: () => `'{"type":"none"}'` })
  transform!: FeatureTransform;

  @Column({ type: 'jsonb', nullable: true })
  expression!: FeatureExpressionRecord | null;

  @Column({ type: 'jsonb', default: () => `'{}'` })
  costs!: FeatureCostsRecord;

  @Column({ type: 'jsonb', default: () => `'[]'` })
  provenance!: FeatureProvenance[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
