import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Degraded model tiers: versions of a model published by divide as tier-0 (full), tier-1, … */
export class ModelTiers1795300700000 implements MigrationInterface {
  name = 'ModelTiers1795300700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE models ADD COLUMN tier int`);
    await q.query(`ALTER TABLE models ADD COLUMN experiment_id uuid REFERENCES experiments(id) ON DELETE SET NULL`);
    await q.query(`ALTER TABLE models ADD COLUMN costs jsonb`);
    await q.query(`CREATE INDEX models_tier_idx ON models (business_line, name, tier)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX models_tier_idx`);
    await q.query(`ALTER TABLE models DROP COLUMN costs`);
    await q.query(`ALTER TABLE models DROP COLUMN experiment_id`);
    await q.query(`ALTER TABLE models DROP COLUMN tier`);
  }
}
