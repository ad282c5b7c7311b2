import type { DataSource, EntityManager } from 'typeorm';
import { ConflictError, InvalidInputError, NotFoundError, canSeeLine, requireWrite, type RequestScope } from '@abacus/core';
import { writeAudit } from '@abacus/access';
import { ReportScheduleEntity } from '@abacus/data';
import type { QueueService } from '@abacus/queue';
import { QueueUnavailableError } from '@abacus/workflows';
import { latestModel } from './model-ref';
import { cronProblem, nextFire, type CreateSchedule, type ScheduleListQuery, type UpdateSchedule } from './report.schemas';

type SchedulerQueue = Pick<QueueService, 'upsertReportScheduler' | 'removeReportScheduler' | 'reportSchedulerNext'>;

export interface ScheduleDefaults {
  cron: string;
  timezone: string;
}

/**
 * Report schedules, one per model: the row in Postgres is the record, BullMQ's job scheduler in Redis
 * fires it. Both change in one step: the scheduler is written inside the row's transaction, so a
 * refused or failed scheduler write leaves no row (and the worker's sweep restores a scheduler that
 * Redis lost).
 */
export class ReportScheduleService {
  constructor(
    private readonly ds: DataSource,
    private readonly queue: SchedulerQueue,
    private readonly defaults: ScheduleDefaults,
  ) {}

  private async view(s: ReportScheduleEntity) {
    const scheduled = await this.queue.reportSchedulerNext(s.id).catch(() => null);
    const next = scheduled ?? nextFire(s.cron, s.timezone);
    return { ...s, nextRunAt: next === null ? null : new Date(next).toISOString(), scheduled: scheduled !== null };
  }

  private async scheduler(fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      throw new QueueUnavailableError(`the queue is unavailable: ${(err as Error).message}`);
    }
  }

  async create(input: CreateSchedule, scope: RequestScope) {
    requireWrite(scope, input.businessLine, 'schedule reports');
    const model = await latestModel(this.ds, input.model, input.businessLine, scope);
    const cron = input.cron ?? this.defaults.cron;
    const timezone = input.timezone ?? this.defaults.timezone;
    const problem = cronProblem(cron, timezone);
    if (problem) throw new InvalidInputError('cron', problem);
    const repo = this.ds.getRepository(ReportScheduleEntity);
    if (await repo.existsBy({ businessLine: model.businessLine, modelName: model.name })) {
      throw new ConflictError(
        `model "${model.name}" in business line "${model.businessLine}" already has a report schedule: change it with PATCH`,
      );
    }
    try {
      const saved = await this.ds.transaction(async (m) => {
        const row = await m.getRepository(ReportScheduleEntity).save(
          m.getRepository(ReportScheduleEntity).create({
            businessLine: model.businessLine,
            modelName: model.name,
            cron,
            timezone,
            emails: input.emails,
            options: { subtract: input.subtract, thresholds: input.thresholds },
            owner: scope.user,
          }),
        );
        await writeAudit(m, scope, {
          action: 'report_schedule.created',
          businessLine: row.businessLine,
          targetType: 'report_schedule',
          targetId: row.id,
          details: { model: row.modelName, cron, timezone, emails: row.emails.length },
        });
        await this.scheduler(() => this.queue.upsertReportScheduler(row.id, cron, timezone));
        return row;
      });
      return this.view(saved);
    } catch (err) {
      if ((err as { code?: string }).code === '23505')
        throw new ConflictError(`model "${model.name}" already has a report schedule`);
      throw err;
    }
  }

  private async find(m: EntityManager, id: string, scope: RequestScope, lock = false): Promise<ReportScheduleEntity> {
    const qb = m.getRepository(ReportScheduleEntity).createQueryBuilder('s').where('s.id = :id', { id });
    if (lock) qb.setLock('pessimistic_write');
    const s = await qb.getOne();
    if (!s || !canSeeLine(scope, s.businessLine)) throw new NotFoundError('report schedule', id);
    return s;
  }

  async get(id: string, scope: RequestScope) {
    return this.view(await this.find(this.ds.manager, id, scope));
  }

  async list(scope: RequestScope, q: ScheduleListQuery) {
    const qb = this.ds
      .getRepository(ReportScheduleEntity)
      .createQueryBuilder('s')
      .orderBy('s.business_line')
      .addOrderBy('s.model_name');
    if (scope.lines) qb.andWhere('s.business_line = ANY(:lines)', { lines: scope.lines });
    if (q.businessLine) qb.andWhere('s.business_line = :bl', { bl: q.businessLine });
    if (q.model) qb.andWhere('s.model_name = :model', { model: q.model });
    return Promise.all((await qb.getMany()).map((s) => this.view(s)));
  }

  async update(id: string, input: UpdateSchedule, scope: RequestScope) {
    const saved = await this.ds.transaction(async (m) => {
      const s = await this.find(m, id, scope, true);
      requireWrite(scope, s.businessLine, 'change report schedules');
      const cron = input.cron ?? s.cron;
      const timezone = input.timezone ?? s.timezone;
      const problem = cronProblem(cron, timezone);
      if (problem) throw new InvalidInputError('cron', problem);
      const options = s.options as { subtract?: unknown; thresholds?: unknown };
      s.cron = cron;
      s.timezone = timezone;
      if (input.emails) s.emails = input.emails;
      s.options = {
        subtract: input.subtract ?? options.subtract ?? {},
        thresholds: input.thresholds ?? options.thresholds ?? {},
      };
      await m.getRepository(ReportScheduleEntity).save(s);
      await writeAudit(m, scope, {
        action: 'report_schedule.updated',
        businessLine: s.businessLine,
        targetType: 'report_schedule',
        targetId: s.id,
        details: { changed: Object.keys(input) },
      });
      await this.scheduler(() => this.queue.upsertReportScheduler(s.id, cron, timezone));
      return s;
    });
    return this.view(saved);
  }

  async remove(id: string, scope: RequestScope) {
    const removed = await this.ds.transaction(async (m) => {
      const s = await this.find(m, id, scope, true);
      requireWrite(scope, s.businessLine, 'delete report schedules');
      await m.getRepository(ReportScheduleEntity).delete({ id });
      await writeAudit(m, scope, {
        action: 'report_schedule.deleted',
        businessLine: s.businessLine,
        targetType: 'report_schedule',
        targetId: s.id,
        details: { model: s.modelName },
      });
      await this.scheduler(() => this.queue.removeReportScheduler(s.id).then(() => undefined));
      return s;
    });
    return { ...removed, id, deleted: true };
  }
}
