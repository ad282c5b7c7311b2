import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Weekly auto-pruning reports: a schedule per model, the reports, and their deliveries (webhook, e-mail). */
export class Reports1795300900000 implements MigrationInterface {
  name = 'Reports1795300900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE report_schedules (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        business_line text NOT NULL REFERENCES business_lines(name),
        model_name text NOT NULL,
        cron text NOT NULL,
        timezone text NOT NULL,
        emails jsonb NOT NULL DEFAULT '[]',
        options jsonb NOT NULL DEFAULT '{}',
        owner text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (business_line, model_name)
      )`);
    await q.query(`
      CREATE TABLE reports (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        business_line text NOT NULL REFERENCES business_lines(name),
        model_name text NOT NULL,
        model_id uuid NOT NULL REFERENCES models(id),
        schedule_id uuid REFERENCES report_schedules(id) ON DELETE SET NULL,
        trigger text NOT NULL CHECK (trigger IN ('schedule', 'manual')),
        fire_at timestamptz NOT NULL,
        status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'succeeded', 'failed')),
        experiment_id uuid NOT NULL,
        sample_set_id uuid,
        previous_report_id uuid REFERENCES reports(id) ON DELETE SET NULL,
        options jsonb NOT NULL DEFAULT '{}',
        summary jsonb,
        content jsonb,
        html text,
        error text,
        owner text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz
      )`);
    // one report per schedule fire, however many workers see it
    await q.query(
      `CREATE UNIQUE INDEX reports_schedule_fire_idx ON reports (schedule_id, fire_at) WHERE schedule_id IS NOT NULL`,
    );
    await q.query(`CREATE INDEX reports_line_model_idx ON reports (business_line, model_name, created_at)`);
    await q.query(`
      CREATE TABLE report_deliveries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        report_id uuid NOT NULL REFERENCES reports(id) ON DELETE CASCADE,
        channel text NOT NULL CHECK (channel IN ('webhook', 'email')),
        target text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts int NOT NULL DEFAULT 0,
        last_error text,
        delivered_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (report_id, channel, target)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE report_deliveries`);
    await q.query(`DROP TABLE reports`);
    await q.query(`DROP TABLE report_schedules`);
  }
}
