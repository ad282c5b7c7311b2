import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One score of one feature by one scorer in one experiment. Unique on (experiment, feature, scorer),
 * so a retried trial overwrites its results instead of adding a second copy.
 */
@Entity({ name: 'feature_results' })
@Index(['experimentId', 'featureName', 'scorer'], { unique: true })
export class FeatureResultEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'experiment_id', type: 'uuid' })
  experimentId!: string;

  @Column({ name: 'trial_id', type: 'uuid' })
  trialId!: string;

  @Column({ name: 'business_line', type: 'text' })
  businessLine!: string;

  @Column({ name: 'feature_name', type: 'text' })
  featureName!: string;

  /** iv, psi, shuffle_auc_drop, ... */
  @Column({ type: 'text' })
  scorer!: string;

  @Column({ type: 'double precision' })
  value!: number;

  @Column({ name: 'ci_low', type: 'double precision', nullable: true })
  ciLow!: number | null;

  @Column({ name: 'ci_high', type: 'double precision', nullable: true })
  ciHigh!: number | null;

  @Column({ type: 'int', nullable: true })
  rank!: number | null;

  @Column({ type: 'jsonb', default: () => `'{}'` })
  details!: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
