import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sample sets registered by reference: the store location (s3://... or file://...), the objects it
 * pinned at registration (key, size, ETag, rows, partition values) and the partition range taken.
 * Uploaded sets keep location NULL.
 */
export class SampleReferences1795301000000 implements MigrationInterface {
  name = 'SampleReferences1795301000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sample_sets ADD COLUMN location text`);
    await q.query(`ALTER TABLE sample_sets ADD COLUMN objects jsonb`);
    await q.query(`ALTER TABLE sample_sets ADD COLUMN partitions jsonb`);
    await q.query(
      `ALTER TABLE sample_sets ADD CONSTRAINT sample_sets_reference_objects CHECK ((location IS NULL) = (objects IS NULL))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sample_sets DROP CONSTRAINT sample_sets_reference_objects`);
    await q.query(`ALTER TABLE sample_sets DROP COLUMN partitions`);
    await q.query(`ALTER TABLE sample_sets DROP COLUMN objects`);
    await q.query(`ALTER TABLE sample_sets DROP COLUMN location`);
  }
}
