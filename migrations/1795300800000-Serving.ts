import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Serving tiers: served models with their switching policy, the switch log, webhook deliveries. */
export class Serving1795300800000 implements MigrationInterface {
  name = 'Serving1795300800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE serving_models (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        business_line text NOT NULL REFERENCES business_lines(name),
        model_name text NOT NULL,
        tiers jsonb NOT NULL,
        webhook_url text NOT NULL,
        webhook_secret text NOT NULL,
        policy jsonb NOT NULL,
        owner text NOT NULL,
        active_tier int NOT NULL,
        active_model_id uuid NOT NULL REFERENCES models(id),
        tier_since timestamptz NOT NULL,
        last_switch_at timestamptz,
        pinned_tier int,
        pin_reason text,
        pinned_by text,
        pinned_at timestamptz,
        last_signals jsonb,
        last_signal_at timestamptz,
        state_rev int NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX serving_models_line_name_idx ON serving_models (business_line, model_name)`);
    await q.query(`
      CREATE TABLE serving_switches (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        serving_id uuid NOT NULL REFERENCES serving_models(id) ON DELETE CASCADE,
        at timestamptz NOT NULL,
        from_tier int,
        to_tier int NOT NULL,
        model_id uuid NOT NULL REFERENCES models(id),
        reason text NOT NULL,
        signals jsonb,
        manual boolean NOT NULL,
        actor text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX serving_switches_serving_at_idx ON serving_switches (serving_id, at)`);
    await q.query(`
      CREATE TABLE serving_webhook_deliveries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        serving_id uuid NOT NULL REFERENCES serving_models(id) ON DELETE CASCADE,
        switch_id uuid NOT NULL REFERENCES serving_switches(id) ON DELETE CASCADE,
        event text NOT NULL,
        url text NOT NULL,
        payload jsonb NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts int NOT NULL DEFAULT 0,
        status_codes jsonb NOT NULL DEFAULT '[]',
        last_error text,
        delivered_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX serving_webhook_deliveries_switch_idx ON serving_webhook_deliveries (switch_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE serving_webhook_deliveries`);
    await q.query(`DROP TABLE serving_switches`);
    await q.query(`DROP TABLE serving_models`);
  }
}
