import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Init1795300000000 implements MigrationInterface {
  name = 'Init1795300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS pgcrypto`);
    await q.query(`
      CREATE TABLE business_lines (
        name text PRIMARY KEY,
        description text NOT NULL DEFAULT '',
        owner text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE feature_tables (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        business_line text NOT NULL REFERENCES business_lines(name),
        owner text NOT NULL,
        entity_key text NOT NULL,
        time_column text,
        files jsonb NOT NULL,
        schema jsonb NOT NULL,
        row_count bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (business_line, name)
      )`);
    await q.query(`
      CREATE TABLE features (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        business_line text NOT NULL REFERENCES business_lines(name),
        owner text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('numeric', 'categorical', 'multi_id')),
        description text NOT NULL DEFAULT '',
        feature_table_id uuid REFERENCES feature_tables(id) ON DELETE SET NULL,
        source_table text,
        source_column text,
        entity_key text,
        transform jsonb NOT NULL DEFAULT '{"type":"none"}',
        costs jsonb NOT NULL DEFAULT '{}',
        provenance jsonb NOT NULL DEFAULT '[]',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (business_line, name)
      )`);
    await q.query(`
      CREATE TABLE sample_sets (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        business_line text NOT NULL REFERENCES business_lines(name),
        owner text NOT NULL,
        files jsonb NOT NULL,
        format text NOT NULL CHECK (format IN ('parquet', 'csv')),
        schema jsonb NOT NULL,
        row_count bigint NOT NULL,
        label_column text NOT NULL,
        time_column text,
        time_min double precision,
        time_max double precision,
        key_columns jsonb NOT NULL DEFAULT '[]',
        sharing_policy jsonb NOT NULL DEFAULT '{"shareWith":[]}',
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (business_line, name)
      )`);
    await q.query(`
      CREATE TABLE models (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        version int NOT NULL DEFAULT 1,
        business_line text NOT NULL REFERENCES business_lines(name),
        owner text NOT NULL,
        sample_set_id uuid NOT NULL REFERENCES sample_sets(id),
        features jsonb NOT NULL,
        architecture jsonb NOT NULL DEFAULT '{}',
        training_params jsonb NOT NULL DEFAULT '{}',
        checkpoint_path text,
        metrics jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (business_line, name, version)
      )`);
    await q.query(`
      CREATE TABLE experiments (
        id uuid PRIMARY KEY,
        kind text NOT NULL,
        name text NOT NULL DEFAULT '',
        business_line text NOT NULL REFERENCES business_lines(name),
        owner text NOT NULL,
        spec jsonb NOT NULL,
        status text NOT NULL DEFAULT 'queued'
          CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        progress double precision NOT NULL DEFAULT 0,
        progress_message text NOT NULL DEFAULT '',
        result jsonb,
        error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz
      )`);
    await q.query(`CREATE INDEX experiments_line_created ON experiments (business_line, created_at)`);
    await q.query(`CREATE INDEX experiments_status ON experiments (status)`);
    await q.query(`
      CREATE TABLE trials (
        id uuid PRIMARY KEY,
        experiment_id uuid NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
        business_line text NOT NULL,
        owner text NOT NULL,
        kind text NOT NULL,
        seq int NOT NULL DEFAULT 0,
        params jsonb NOT NULL DEFAULT '{}',
        status text NOT NULL DEFAULT 'queued'
          CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        progress double precision NOT NULL DEFAULT 0,
        metrics jsonb,
        artifacts jsonb NOT NULL DEFAULT '{}',
        attempts int NOT NULL DEFAULT 0,
        error text,
        backend text,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz
      )`);
    await q.query(`CREATE INDEX trials_experiment ON trials (experiment_id)`);
    await q.query(`
      CREATE TABLE feature_results (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        experiment_id uuid NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
        trial_id uuid NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        business_line text NOT NULL,
        feature_name text NOT NULL,
        scorer text NOT NULL,
        value double precision NOT NULL,
        ci_low double precision,
        ci_high double precision,
        rank int,
        details jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (experiment_id, feature_name, scorer)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE feature_results`);
    await q.query(`DROP TABLE trials`);
    await q.query(`DROP TABLE experiments`);
    await q.query(`DROP TABLE models`);
    await q.query(`DROP TABLE sample_sets`);
    await q.query(`DROP TABLE features`);
    await q.query(`DROP TABLE feature_tables`);
    await q.query(`DROP TABLE business_lines`);
  }
}
