import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * An API key. Only the SHA-256 of the secret is stored (the secret is shown once, at creation);
 * `prefix` is the secret's non-secret start, so people can tell their keys apart.
 */
@Entity({ name: 'api_keys' })
export class ApiKeyEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  /** who or what the key belongs to (a person, a pipeline); recorded as the owner of what it creates */
  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  prefix!: string;

  /** hex SHA-256 of the whole secret */
  @Column({ type: 'text', select: false })
  hash!: string;

  @Column({ type: 'text' })
  role!: 'viewer' | 'engineer' | 'admin';

  /** business lines the key is scoped to; ['*'] = all */
  @Column({ type: 'jsonb' })
  lines!: string[];

  @Column({ name: 'created_by', type: 'text' })
  createdBy!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt!: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;

  @Column({ name: 'revoked_by', type: 'text', nullable: true })
  revokedBy!: string | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt!: Date | null;
}
