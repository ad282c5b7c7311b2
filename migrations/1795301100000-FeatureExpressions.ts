import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Features defined by an expression over a sample set's columns and its earlier rows: the tree, its
 * text, the set it was checked against and its lineage. Column and table features keep it NULL.
 */
export class FeatureExpressions1795301100000 implements MigrationInterface {
  name = 'FeatureExpressions1795301100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE features ADD COLUMN expression jsonb`);
    await q.query(
      `ALTER TABLE features ADD CONSTRAINT features_expression_alone CHECK (expression IS NULL OR (feature_table_id IS NULL AND source_column IS NULL))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE features DROP CONSTRAINT features_expression_alone`);
    await q.query(`ALTER TABLE features DROP COLUMN expression`);
  }
}
