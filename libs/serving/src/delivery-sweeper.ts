import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { QueueService } from '@abacus/queue';

/**
 * Re-queues webhook deliveries still pending after `minAgeMs` (the API committed the switch but could
 * not enqueue it, or Redis lost the job). Job id = delivery id, so a delivery whose job is still
 * waiting or retrying is not queued twice.
 */
export class DeliverySweeper {
  private readonly logger = new Logger(DeliverySweeper.name);
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly ds: DataSource,
    private readonly queue: Pick<QueueService, 'enqueueWebhook'>,
    private readonly minAgeMs: number,
  ) {}

  start(intervalMs: number): void {
    if (intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.sweepOnce()
        .catch((err: Error) => this.logger.warn(`webhook sweep failed (will try again): ${err.message}`))
        .finally(() => (this.running = null));
    }, intervalMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
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
