import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export type FeatureKind = 'numeric' | 'categorical' | 'multi_id';

export interface FeatureTransform {
  type: 'none' | 'hash' | 'buckets' | 'log' | 'standardize';
  hashBuckets?: number;
  boundaries?: number[];
}

export interface FeatureCostsRecord {
  storageBytesPerEntity?: number;
  fetchBytesPerRequest?: number;
  computeCost?: number;
  /** measured by the platform or declared by the owner */
  source?: 'measured' | 'declared';
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
  measuredAt: string;
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

  @Column({ type: 'jsonb', default: () => `'{}'` })
  costs!: FeatureCostsRecord;

  @Column({ type: 'jsonb', default: () => `'[]'` })
  provenance!: FeatureProvenance[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
