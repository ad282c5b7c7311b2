import type { MigrationInterface, QueryRunner } from 'typeorm';

/** DataBank metadata of a sample set: what its label means and which content it holds. */
export class DataBank1795300500000 implements MigrationInterface {
  name = 'DataBank1795300500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sample_sets ADD COLUMN label_semantics text NOT NULL DEFAULT 'exposure->click'`);
    await q.query(`ALTER TABLE sample_sets ADD COLUMN data_version text`);
    await q.query(`CREATE INDEX sample_sets_label_semantics_idx ON sample_sets (label_semantics)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX sample_sets_label_semantics_idx`);
    await q.query(`ALTER TABLE sample_sets DROP COLUMN data_version`);
    await q.query(`ALTER TABLE sample_sets DROP COLUMN label_semantics`);
  }
}
