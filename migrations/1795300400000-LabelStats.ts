import type { MigrationInterface, QueryRunner } from 'typeorm';

/** What the import found in a sample set's label (classes, event value, counts), checked again at submit. */
export class LabelStats1795300400000 implements MigrationInterface {
  name = 'LabelStats1795300400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sample_sets ADD COLUMN label_stats jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sample_sets DROP COLUMN label_stats`);
  }
}
