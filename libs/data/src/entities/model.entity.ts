import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** A model definition; a new version is a new row with the same name and version + 1. */
@Entity({ name: 'models' })
@Index(['businessLine', 'name', 'version'], { unique: true })
export class ModelEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'int', default: 1 })
  version!: number;

  @Column({ name: 'business_line', type: 'text' })
  businessLine!: string;

  @Column({ type: 'text' })
  owner!: string;

  @Column({ name: 'sample_set_id', type: 'uuid' })
  sampleSetId!: string;

  @Column({ type: 'jsonb' })
  features!: string[];

  /** embedding dim, pooling, MLP sizes, wide part: the runtime's model spec minus the inputs */
  @Column({ type: 'jsonb', default: () => `'{}'` })
  architecture!: Record<string, unknown>;

  @Column({ name: 'training_params', type: 'jsonb', default: () => `'{}'` })
  trainingParams!: Record<string, unknown>;

  @Column({ name: 'checkpoint_path', type: 'text', nullable: true })
  checkpointPath!: string | null;

  @Column({ type: 'jsonb', nullable: true })
  metrics!: Record<string, number> | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
