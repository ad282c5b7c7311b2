import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Trials form a tree (a trial runs after the trials below it): record each trial's parent. */
export class TrialTree1795300100000 implements MigrationInterface {
  name = 'TrialTree1795300100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE trials ADD COLUMN parent_seq int`);
    await q.query(`CREATE INDEX trials_experiment_parent ON trials (experiment_id, parent_seq)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX trials_experiment_parent`);
    await q.query(`ALTER TABLE trials DROP COLUMN parent_seq`);
  }
}
