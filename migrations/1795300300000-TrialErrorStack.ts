import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The stack of a failed trial, for operators: kept beside the message, never part of the API's trial view. */
export class TrialErrorStack1795300300000 implements MigrationInterface {
  name = 'TrialErrorStack1795300300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE trials ADD COLUMN error_stack text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE trials DROP COLUMN error_stack`);
  }
}
