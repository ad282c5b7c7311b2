import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { PeriodicPass } from '@abacus/core';
import { ReportScheduleEntity } from '@abacus/data';
import type { QueueService } from '@abacus/queue';

type SweepQueue = Pick<
  QueueService,
  'enqueueReportRun' | 'enqueueReportDelivery' | 'upsertReportScheduler' | 'reportSchedulerNext'
>;

/**
 * Postgres is the record of reports, Redis only runs them. Each pass: re-queues reports still running
 * and deliveries still pending after `minAgeMs` (job id = report or delivery id, so one whose job is
 * still there is not queued twice), and restores the job scheduler of every schedule Redis no longer
 * holds (a Redis restart without persistence).
 */
export class ReportSweeper {
  private readonly logger = new Logger(ReportSweeper.name);
  private readonly periodic = new PeriodicPass('report sweep', () => this.sweepOnce(), ReportSweeper.name);

  constructor(
    private readonly ds: DataSource,
    private readonly queue: SweepQueue,
    private readonly minAgeMs: number,
  ) {}

  start(intervalMs: number): void {
    this.periodic.start(intervalMs);
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  async sweepOnce(): Promise<{ reports: string[]; deliveries: string[]; schedulers: string[] }> {
    const age = [this.minAgeMs];
    const reports: { id: string }[] = await this.ds.query(
      `SELECT id FROM reports WHERE status = 'running'
        AND updated_at < now() - make_interval(secs => $1::double precision / 1000) ORDER BY created_at LIMIT 500`,
      age,
    );
    for (const r of reports) await this.queue.enqueueReportRun(r.id);
    const deliveries: { id: string }[] = await this.ds.query(
      `SELECT id FROM report_deliveries WHERE status = 'pending'
        AND updated_at < now() - make_interval(secs => $1::double precision / 1000) ORDER BY created_at LIMIT 500`,
      age,
    );
    for (const d of deliveries) await this.queue.enqueueReportDelivery(d.id);
    const schedulers: string[] = [];
    for (const s of await this.ds.getRepository(ReportScheduleEntity).find()) {
      if ((await this.queue.reportSchedulerNext(s.id)) === null) {
        await this.queue.upsertReportScheduler(s.id, s.cron, s.timezone);
        schedulers.push(s.id);
      }
    }
    const n = reports.length + deliveries.length + schedulers.length;
    if (n) {
      this.logger.log(
        `re-queued ${reports.length} report run(s), ${deliveries.length} delivery(ies); restored ${schedulers.length} scheduler(s)`,
      );
    }
    return { reports: reports.map((r) => r.id), deliveries: deliveries.map((d) => d.id), schedulers };
  }
}
