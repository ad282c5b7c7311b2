import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { ColumnSchema } from './column-schema';

export interface SharingPolicy {
  /** business lines allowed to borrow these samples; [] = private, ['*'] = everyone */
  shareWith: string[];
  /** fields that must not leave the owning line */
  restrictedColumns?: string[];
}

/** What the import found in the label column (the label rule: docs/reference/limits.md). */
export interface LabelStats {
  /** two classes, no missing values, a known event value */
  binary: boolean;
  /** the two values as text, ascending (numbers normalised: 1.0 → "1") */
  classes: string[];
  /** the value that counts as the event (label = value == positive) */
  positive: string;
  /** the positive value was named at import (else the label is 0/1 or false/true) */
  explicitPositive: boolean;
  /** null for a set registered by reference: registration reads only the files' metadata */
  events: number | null;
  nonEvents: number | null;
}

/** One object of a set registered by reference, as listed at registration. */
export interface ReferencedObjectRecord {
  /** key in the store's container (bucket, or the file store's root) */
  key: string;
  size: number;
  etag: string;
  rows: number;
  /** hive partition values of its path */
  partition: Record<string, string>;
}

const bigintToNumber = { to: (v: number | null) => v, from: (v: string | null) => (v === null ? null : Number(v)) };

@Entity({ name: 'sample_sets' })
@Index(['businessLine', 'name'], { unique: true })
export class SampleSetEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'business_line', type: 'text' })
  businessLine!: string;

  @Column({ type: 'text' })
  owner!: string;

  /** paths relative to the data directory */
  @Column({ type: 'jsonb' })
  files!: string[];

  @Column({ type: 'text' })
  format!: 'parquet' | 'csv';

  @Column({ type: 'jsonb' })
  schema!: ColumnSchema[];

  @Column({ name: 'row_count', type: 'bigint', transformer: bigintToNumber })
  rowCount!: number;

  @Column({ name: 'label_column', type: 'text' })
  labelColumn!: string;

  @Column({ name: 'time_column', type: 'text', nullable: true })
  timeColumn!: string | null;

  @Column({ name: 'time_min', type: 'double precision', nullable: true })
  timeMin!: number | null;

  @Column({ name: 'time_max', type: 'double precision', nullable: true })
  timeMax!: number | null;

  /** null for sample sets imported before labels were checked at import */
  @Column({ name: 'label_stats', type: 'jsonb', nullable: true })
  labelStats!: LabelStats | null;

  /** what the label means, `event->outcome` (e.g. exposure->click): only sets of one meaning are pooled */
  @Column({ name: 'label_semantics', type: 'text', default: 'exposure->click' })
  labelSemantics!: string;

  /** content hash of the stored file (null for sets imported before the DataBank) */
  @Column({ name: 'data_version', type: 'text', nullable: true })
  dataVersion!: string | null;

  /** registered by reference: the store URL the set lives at (s3://bucket/prefix/ or file:///path/); null for uploads */
  @Column({ type: 'text', nullable: true })
  location!: string | null;

  /** registered by reference: the objects pinned at registration (the data version hashes this list) */
  @Column({ type: 'jsonb', nullable: true })
  objects!: ReferencedObjectRecord[] | null;

  /** registered by reference: the partition range taken ({column, from, to}), if any */
  @Column({ type: 'jsonb', nullable: true })
  partitions!: { column: string; from?: string; to?: string } | null;

  @Column({ name: 'key_columns', type: 'jsonb', default: () => `'[]'` })
  keyColumns!: string[];

  @Column({ name: 'sharing_policy', type: 'jsonb', default: () => `'{"shareWith":[]}'` })
  sharingPolicy!: SharingPolicy;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
