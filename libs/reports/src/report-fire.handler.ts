import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { ModelEntity, ReportScheduleEntity } from '@abacus/data';
import type { JobContext, JobName, JobPayloads, QueueService } from '@abacus/queue';

/** The fire time of a job made by BullMQ's job scheduler: its id is `repeat:<scheduler id>:<fire time in ms>`. */
export function fireTimeOf(job: { id?: string; timestamp: number; opts?: { delay?: number } }): Date {
  const m = /:(\d{10,})$/.exec(job.id ?? '');
  return new Date(m ? Number(m[1]) : job.timestamp + (job.opts?.delay ?? 0));
}

/**
 * One fire of a report schedule. BullMQ hands each fire to one worker; the report row is unique on
 * (schedule, fire time), so a retried or duplicated fire finds the report it made instead of adding a
 * second one. Then the report's run job (job id = report id: queueing it again is harmless).
 */
export class ReportFireHandler {
  private readonly logger = new Logger(ReportFireHandler.name);

  constructor(
    private readonly ds: DataSource,
    private readonly queue: Pick<QueueService, 'enqueueReportRun' | 'removeReportScheduler'>,
  ) {}

  async handle(p: JobPayloads[JobName.ReportFire], ctx: Pick<JobContext, 'job'>): Promise<{ reportId: string | null }> {
    const s = await this.ds.getRepository(ReportScheduleEntity).findOneBy({ id: p.scheduleId });
    if (!s) {
      // the schedule was deleted while Redis still held its scheduler (or its row never committed)
      await this.queue.removeReportScheduler(p.scheduleId);
      this.logger.warn(`report schedule ${p.scheduleId} no longer exists: scheduler removed`);
      return { reportId: null };
    }
    const model = await this.ds
      .getRepository(ModelEntity)
      .findOne({ where: { businessLine: s.businessLine, name: s.modelName }, order: { version: 'DESC' } });
    if (!model) {
      this.logger.warn(`report schedule ${s.id}: no model "${s.modelName}" in ${s.businessLine}; nothing to report`);
      return { reportId: null };
    }
    const fireAt = fireTimeOf(ctx.job);
    const options = { ...(s.options as object), emails: s.emails };
    await this.ds.query(
      `INSERT INTO reports (business_line, model_name, model_id, schedule_id, trigger, fire_at, status, experiment_id, options, owner)
       VALUES ($1, $2, $3, $4, 'schedule', $5, 'running', $6, $7, $8)
       ON CONFLICT (schedule_id, fire_at) WHERE schedule_id IS NOT NULL DO NOTHING`,
      [s.businessLine, s.modelName, model.id, s.id, fireAt, randomUUID(), JSON.stringify(options), s.owner],
    );
    const [{ id }] = (await this.ds.query(`SELECT id FROM reports WHERE schedule_id = $1 AND fire_at = $2`, [s.id, fireAt])) as {
      id: string;
    }[];
    await this.queue.enqueueReportRun(id);
    this.logger.log(`report schedule ${s.id} fired for ${fireAt.toISOString()}: report ${id}`);
    return { reportId: id };
  }
}
