import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** One slot of a shared embedding: its rows and what its ids stand for (see SlotIdSpace in @abacus/samples). */
export interface SharedEmbeddingSlot {
  name: string;
  rows: number;
  idSpace: 'dictionary' | 'identity' | 'hash' | 'buckets';
}

/** A sample set a shared embedding was learned from, at the data version it had then. */
export interface SharedEmbeddingSource {
  sampleSetId: string;
  businessLine: string;
  name: string;
  dataVersion: string | null;
  /** 'target': the borrowing line's own set; 'source': a borrowed one */
  role: 'target' | 'source';
  rows: number;
}

/**
 * A named, versioned embedding table set learned on pooled samples (DataBank): `name@version`. The file
 * (safetensors: `embedding.<slot>` [rows, dim], `wide.<slot>`, id spaces in the metadata) lives in the data
 * directory; `originKey` makes registration idempotent (a retried trial finds its version).
 */
@Entity({ name: 'shared_embeddings' })
@Index(['name', 'version'], { unique: true })
export class SharedEmbeddingEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'int' })
  version!: number;

  @Column({ name: 'business_line', type: 'text' })
  businessLine!: string;

  @Column({ type: 'text' })
  owner!: string;

  @Column({ type: 'int' })
  dim!: number;

  @Column({ type: 'jsonb' })
  slots!: SharedEmbeddingSlot[];

  @Column({ type: 'jsonb' })
  sources!: SharedEmbeddingSource[];

  /**
   * shareWith: lines whose models may start from it; updatableBy: lines that may publish new versions
   * of the name (trained from a version on their own samples; default none: the owner line only). The
   * owner line sets both for every version of the name.
   */
  @Column({ name: 'sharing_policy', type: 'jsonb', default: () => `'{"shareWith": []}'` })
  sharingPolicy!: { shareWith: string[]; updatableBy?: string[] };

  /** relative to the data directory */
  @Column({ type: 'text' })
  file!: string;

  @Column({ type: 'bigint', transformer: { to: (v: number) => v, from: (v: string) => Number(v) } })
  bytes!: number;

  @Column({ type: 'text' })
  sha256!: string;

  @Column({ name: 'experiment_id', type: 'uuid', nullable: true })
  experimentId!: string | null;

  @Column({ name: 'origin_key', type: 'text', unique: true })
  originKey!: string;

  /** how it was learned: strategy, training seed, model, test AUC of the pooled model */
  @Column({ type: 'jsonb', default: () => `'{}'` })
  provenance!: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
