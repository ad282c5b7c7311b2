import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import type { ExperimentEntity, ExperimentStatus } from './experiment.entity';

/** One unit of queued work (train, evaluate, score, ablate). Its id is its BullMQ job id. */
@Entity({ name: 'trials' })
@Index(['experimentId'])
export class TrialEntity {
  @PrimaryColumn('uuid')
  id!: string;

  @Column({ name: 'experiment_id', type: 'uuid' })
  experimentId!: string;

  @ManyToOne('ExperimentEntity', (e: ExperimentEntity) => e.trials, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'experiment_id' })
  experiment?: ExperimentEntity;

  @Column({ name: 'business_line', type: 'text' })
  businessLine!: string;

  @Column({ type: 'text' })
  owner!: string;

  @Column({ type: 'text' })
  kind!: string;

  /** order within the experiment */
  @Column({ type: 'int', default: 0 })
  seq!: number;

  /** seq of the trial that runs after this one; null = the experiment's finalize */
  @Column({ name: 'parent_seq', type: 'int', nullable: true })
  parentSeq!: number | null;

  @Column({ type: 'jsonb', default: () => `'{}'` })
  params!: Record<string, unknown>;

  @Column({ type: 'text', default: 'queued' })
  status!: ExperimentStatus;

  @Column({ type: 'double precision', default: 0 })
  progress!: number;

  @Column({ type: 'jsonb', nullable: true })
  metrics!: Record<string, unknown> | null;

  @Column({ type: 'jsonb', default: () => `'{}'` })
  artifacts!: Record<string, string>;

  @Column({ type: 'int', default: 0 })
  attempts!: number;

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  /** the failure's stack, for operators; not selected by default so API responses never carry it */
  @Column({ name: 'error_stack', type: 'text', nullable: true, select: false })
  errorStack?: string | null;

  /** which runtime backend ran it (cpu / cuda / tfjs), or null for trials that need none */
  @Column({ type: 'text', nullable: true })
  backend!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;
}
