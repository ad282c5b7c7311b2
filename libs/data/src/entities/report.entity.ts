import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** The auto-pruning report schedule of one model (by name: each fire reports on its latest version). */
@Entity({ name: 'report_schedules' })
export class ReportScheduleEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'business_line', type: 'text' })
  businessLine!: string;

  @Column({ name: 'model_name', type: 'text' })
  modelName!: string;

  /** cron pattern (5 fields, or 6 with seconds), evaluated in `timezone` */
  @Column({ type: 'text' })
  cron!: string;

  @Column({ type: 'text' })
  timezone!: string;

  /** where the report is e-mailed (when SMTP is configured) */
  @Column({ type: 'jsonb', default: () => `'[]'` })
  emails!: string[];

  /** subtract options of the report run and the drift thresholds */
  @Column({ type: 'jsonb', default: () => `'{}'` })
  options!: Record<string, unknown>;

  @Column({ type: 'text' })
  owner!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

export type ReportStatus = 'running' | 'succeeded' | 'failed';

/** One auto-pruning report: the subtract experiment it ran, its JSON content and rendered HTML. */
@Entity({ name: 'reports' })
export class ReportEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'business_line', type: 'text' })
  businessLine!: string;

  @Column({ name: 'model_name', type: 'text' })
  modelName!: string;

  @Column({ name: 'model_id', type: 'uuid' })
  modelId!: string;

  @Column({ name: 'schedule_id', type: 'uuid', nullable: true })
  scheduleId!: string | null;

  @Column({ type: 'text' })
  trigger!: 'schedule' | 'manual';

  /** the schedule's fire time (or the time of a manual run) */
  @Column({ name: 'fire_at', type: 'timestamptz' })
  fireAt!: Date;

  @Column({ type: 'text', default: 'running' })
  status!: ReportStatus;

  /** the subtract experiment run in report mode (its id is chosen with the report, so a rerun finds it) */
  @Column({ name: 'experiment_id', type: 'uuid' })
  experimentId!: string;

  @Column({ name: 'sample_set_id', type: 'uuid', nullable: true })
  sampleSetId!: string | null;

  @Column({ name: 'previous_report_id', type: 'uuid', nullable: true })
  previousReportId!: string | null;

  /** what the run used: subtract options, thresholds, e-mail addresses */
  @Column({ type: 'jsonb', default: () => `'{}'` })
  options!: Record<string, unknown>;

  /** what a list shows: removable count, changes */
  @Column({ type: 'jsonb', nullable: true })
  summary!: Record<string, unknown> | null;

  @Column({ type: 'jsonb', nullable: true })
  content!: Record<string, unknown> | null;

  @Column({ type: 'text', nullable: true, select: false })
  html!: string | null;

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  @Column({ type: 'text' })
  owner!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;
}

/** One delivery of a report on one channel to one target; unique, so a rerun never sends twice. */
@Entity({ name: 'report_deliveries' })
export class ReportDeliveryEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'report_id', type: 'uuid' })
  reportId!: string;

  @Column({ type: 'text' })
  channel!: 'webhook' | 'email';

  /** the webhook URL or the e-mail address */
  @Column({ type: 'text' })
  target!: string;

  @Column({ type: 'text', default: 'pending' })
  status!: 'pending' | 'delivered' | 'failed';

  @Column({ type: 'int', default: 0 })
  attempts!: number;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @Column({ name: 'delivered_at', type: 'timestamptz', nullable: true })
  deliveredAt!: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
