import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { ColumnSchema } from './column-schema';

export interface SharingPolicy {
  /** business lines allowed to borrow these samples; [] = private, ['*'] = everyone */
  shareWith: string[];
  /** fields that must not leave the owning line */
  restrictedColumns?: string[];
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

  @Column({ name: 'key_columns', type: 'jsonb', default: () => `'[]'` })
  keyColumns!: string[];

  @Column({ name: 'sharing_policy', type: 'jsonb', default: () => `'{"shareWith":[]}'` })
  sharingPolicy!: SharingPolicy;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
