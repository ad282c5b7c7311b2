import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** A model served in tiers: which tiers it may use, its switching policy, its webhook and its current state. */
@Entity({ name: 'serving_models' })
@Index(['businessLine', 'modelName'])
export class ServingModelEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'business_line', type: 'text' })
  businessLine!: string;

  /** the registered model's name; tier n is the latest version of that name with tier n */
  @Column({ name: 'model_name', type: 'text' })
  modelName!: string;

  @Column({ type: 'jsonb' })
  tiers!: number[];

  @Column({ name: 'webhook_url', type: 'text' })
  webhookUrl!: string;

  /** HMAC key of the webhooks; never returned by the API */
  @Column({ name: 'webhook_secret', type: 'text', select: false })
  webhookSecret!: string;

  @Column({ type: 'jsonb' })
  policy!: Record<string, unknown>;

  @Column({ type: 'text' })
  owner!: string;

  @Column({ name: 'active_tier', type: 'int' })
  activeTier!: number;

  @Column({ name: 'active_model_id', type: 'uuid' })
  activeModelId!: string;

  @Column({ name: 'tier_since', type: 'timestamptz' })
  tierSince!: Date;

  @Column({ name: 'last_switch_at', type: 'timestamptz', nullable: true })
  lastSwitchAt!: Date | null;

  @Column({ name: 'pinned_tier', type: 'int', nullable: true })
  pinnedTier!: number | null;

  @Column({ name: 'pin_reason', type: 'text', nullable: true })
  pinReason!: string | null;

  @Column({ name: 'pinned_by', type: 'text', nullable: true })
  pinnedBy!: string | null;

  @Column({ name: 'pinned_at', type: 'timestamptz', nullable: true })
  pinnedAt!: Date | null;

  @Column({ name: 'last_signals', type: 'jsonb', nullable: true })
  lastSignals!: Record<string, number> | null;

  @Column({ name: 'last_signal_at', type: 'timestamptz', nullable: true })
  lastSignalAt!: Date | null;

  /** bumped by every change of the active state: caches keep the highest they have seen */
  @Column({ name: 'state_rev', type: 'int', default: 0 })
  stateRev!: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

/** One tier switch of a served model: the audit trail behind GET /serving/:id/log. */
@Entity({ name: 'serving_switches' })
@Index(['servingId', 'at'])
export class ServingSwitchEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'serving_id', type: 'uuid' })
  servingId!: string;

  @Column({ type: 'timestamptz' })
  at!: Date;

  @Column({ name: 'from_tier', type: 'int', nullable: true })
  fromTier!: number | null;

  @Column({ name: 'to_tier', type: 'int' })
  toTier!: number;

  @Column({ name: 'model_id', type: 'uuid' })
  modelId!: string;

  @Column({ type: 'text' })
  reason!: string;

  /** the signals that triggered it (automatic switches) */
  @Column({ type: 'jsonb', nullable: true })
  signals!: Record<string, number> | null;

  @Column({ type: 'boolean' })
  manual!: boolean;

  /** the key's user for manual switches, `policy` for automatic ones */
  @Column({ type: 'text' })
  actor!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One webhook of a switch and what became of it. */
@Entity({ name: 'serving_webhook_deliveries' })
export class ServingWebhookDeliveryEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'serving_id', type: 'uuid' })
  servingId!: string;

  @Column({ name: 'switch_id', type: 'uuid' })
  switchId!: string;

  @Column({ type: 'text' })
  event!: string;

  @Column({ type: 'text' })
  url!: string;

  @Column({ type: 'jsonb' })
  payload!: Record<string, unknown>;

  @Column({ type: 'text', default: 'pending' })
  status!: WebhookDeliveryStatus;

  @Column({ type: 'int', default: 0 })
  attempts!: number;

  /** the HTTP status of each attempt (0: no answer) */
  @Column({ name: 'status_codes', type: 'jsonb', default: () => `'[]'` })
  statusCodes!: number[];

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @Column({ name: 'delivered_at', type: 'timestamptz', nullable: true })
  deliveredAt!: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
