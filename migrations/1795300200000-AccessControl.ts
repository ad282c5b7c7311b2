import type { MigrationInterface, QueryRunner } from 'typeorm';

/** API keys (hashed, scoped to business lines, revocable, expiring) and the audit log of who did what. */
export class AccessControl1795300200000 implements MigrationInterface {
  name = 'AccessControl1795300200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        prefix text NOT NULL,
        hash text NOT NULL UNIQUE,
        role text NOT NULL CHECK (role IN ('viewer', 'engineer', 'admin')),
        lines jsonb NOT NULL CHECK (jsonb_typeof(lines) = 'array'),
        created_by text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz,
        revoked_at timestamptz,
        revoked_by text,
        last_used_at timestamptz
      )`);
    await q.query(`
      CREATE TABLE audit_log (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        at timestamptz NOT NULL DEFAULT now(),
        actor_key_id uuid REFERENCES api_keys(id) ON DELETE SET NULL,
        actor_name text NOT NULL,
        actor_role text NOT NULL,
        action text NOT NULL,
        business_line text,
        target_type text NOT NULL,
        target_id text NOT NULL,
        details jsonb NOT NULL DEFAULT '{}'
      )`);
    await q.query(`CREATE INDEX audit_log_at ON audit_log (at DESC)`);
    await q.query(`CREATE INDEX audit_log_action_at ON audit_log (action, at DESC)`);
    await q.query(`CREATE INDEX audit_log_line_at ON audit_log (business_line, at DESC)`);
    await q.query(`CREATE INDEX audit_log_actor_at ON audit_log (actor_name, at DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_log`);
    await q.query(`DROP TABLE api_keys`);
  }
}
