import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Shared embeddings: named, versioned embedding tables learned on pooled DataBank samples. */
export class SharedEmbeddings1795300600000 implements MigrationInterface {
  name = 'SharedEmbeddings1795300600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE shared_embeddings (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        version int NOT NULL,
        business_line text NOT NULL REFERENCES business_lines(name),
        owner text NOT NULL,
        dim int NOT NULL,
        slots jsonb NOT NULL,
        sources jsonb NOT NULL,
        sharing_policy jsonb NOT NULL DEFAULT '{"shareWith": []}',
        file text NOT NULL,
        bytes bigint NOT NULL,
        sha256 text NOT NULL,
        experiment_id uuid REFERENCES experiments(id) ON DELETE SET NULL,
        origin_key text NOT NULL UNIQUE,
        provenance jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT shared_embeddings_name_version UNIQUE (name, version)
      )`);
    await q.query(`CREATE INDEX shared_embeddings_line_idx ON shared_embeddings (business_line)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE shared_embeddings`);
  }
}
