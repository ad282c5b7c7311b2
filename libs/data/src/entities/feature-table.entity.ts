import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { ColumnSchema } from './column-schema';

/** An entity-keyed feature table (user / item / context features), imported from CSV or Parquet. */
@Entity({ name: 'feature_tables' })
@Index(['businessLine', 'name'], { unique: true })
export class FeatureTableEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'business_line', type: 'text' })
  businessLine!: string;

  @Column({ type: 'text' })
  owner!: string;

  @Column({ name: 'entity_key', type: 'text' })
  entityKey!: string;

  /** snapshot time column for point-in-time joins; null = static table */
  @Column({ name: 'time_column', type: 'text', nullable: true })
  timeColumn!: string | null;

  @Column({ type: 'jsonb' })
  files!: string[];

  @Column({ type: 'jsonb' })
  schema!: ColumnSchema[];

  @Column({ name: 'row_count', type: 'bigint', transformer: { to: (v: number) => v, from: (v: string) => Number(v) } })
  rowCount!: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
