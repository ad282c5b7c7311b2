import { Logger } from '@nestjs/common';
import { PeriodicPass } from '@abacus/core';
import type { DataSource } from 'typeorm';
import type { QueueService } from '@abacus/queue';

/**
 * Re-queues webhook deliveries still pending after `minAgeMs` (the API committed the switch but could
 * not enqueue it, or Redis lost the job). Job id = delivery id, so a delivery whose job is still
 * waiting or retrying is not queued twice.
 */
export class DeliverySweeper {
  private readonly logger = new Logger(DeliverySweeper.name);
  private readonly periodic = new PeriodicPass('webhook sweep', () => this.sweepOnce(), DeliverySweeper.name);

  constructor(
    private readonly ds: DataSource,
    private readonly queue: Pick<QueueService, 'enqueueWebhook'>,
    private readonly minAgeMs: number,
  ) {}

  /** Runs a pass every intervalMs (0 = never); a pass never overlaps the previous one. */
  start(intervalMs: number): void {
    this.periodic.start(intervalMs);
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** Returns the ids it queued. */
  async sweepOnce(): Promise<string[]> {
    const rows: { id: string }[] = await this.ds.query(
      `SELECT id FROM serving_webhook_deliveries
        WHERE status = 'pending' AND updated_at < now() - make_interval(secs => $1::double precision / 1000)
        ORDER BY created_at LIMIT 500`,
      [this.minAgeMs],
    );
    for (const r of rows) await this.queue.enqueueWebhook(r.id);
    if (rows.length) this.logger.log(`re-queued ${rows.length} pending webhook deliver${rows.length === 1 ? 'y' : 'ies'}`);
    return rows.map((r) => r.id);
  }
}
