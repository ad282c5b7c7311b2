import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export interface ModelCosts {
  storage: number;
  communication: number;
  compute: number;
  /** each resource as a fraction of tier-0's */
  fractions?: { storage: number; communication: number; compute: number };
}

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

  /** degraded tier published by a divide experiment (alias `tier-<n>`; 0 = the full model); null: not a tier */
  @Column({ type: 'int', nullable: true })
  tier!: number | null;

  /** the experiment that made this version (divide's tiers) */
  @Column({ name: 'experiment_id', type: 'uuid', nullable: true })
  experimentId!: string | null;

  /** cost of serving this version per resource: absolute and as a fraction of the full model's */
  @Column({ type: 'jsonb', nullable: true })
  costs!: ModelCosts | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
