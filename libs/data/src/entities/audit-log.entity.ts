import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One thing someone did: who (key id and name), what (action, target), where (business line), when. */
@Entity({ name: 'audit_log' })
export class AuditLogEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @CreateDateColumn({ type: 'timestamptz' })
  at!: Date;

  /** null when the platform itself acted (bootstrap of the first admin key) */
  @Column({ name: 'actor_key_id', type: 'uuid', nullable: true })
  actorKeyId!: string | null;

  @Column({ name: 'actor_name', type: 'text' })
  actorName!: string;

  @Column({ name: 'actor_role', type: 'text' })
  actorRole!: string;

  /** e.g. key.created, experiment.submitted */
  @Column({ type: 'text' })
  action!: string;

  @Column({ name: 'business_line', type: 'text', nullable: true })
  businessLine!: string | null;

  @Column({ name: 'target_type', type: 'text' })
  targetType!: string;

  @Column({ name: 'target_id', type: 'text' })
  targetId!: string;

  @Column({ type: 'jsonb', default: () => `'{}'` })
  details!: Record<string, unknown>;
}
