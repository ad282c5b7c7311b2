import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { NotFoundError, canSeeLine, requireWrite, type Page, type RequestScope } from '@abacus/core';
import { writeAudit } from '@abacus/access';
import { AuditLogEntity, ReportDeliveryEntity, ReportEntity, ReportScheduleEntity } from '@abacus/data';
import type { QueueService } from '@abacus/queue';
import { QueueUnavailableError } from '@abacus/workflows';
import { latestModel } from './model-ref';
import type { ReportListQuery, RunReport } from './report.schemas';

/** Reports: list, show, the rendered HTML, and a run now (outside the schedule). */
export class ReportService {
  private readonly logger = new Logger(ReportService.name);

  constructor(
    private readonly ds: DataSource,
    private readonly queue: Pick<QueueService, 'enqueueReportRun'>,
  ) {}

  async list(scope: RequestScope, q: ReportListQuery): Promise<Page<ReportEntity>> {
    const qb = this.ds
      .getRepository(ReportEntity)
      .createQueryBuilder('r')
      .select([
        'r.id',
        'r.businessLine',
        'r.modelName',
        'r.modelId',
        'r.scheduleId',
        'r.trigger',
        'r.fireAt',
        'r.status',
        'r.experimentId',
        'r.sampleSetId',
        'r.previousReportId',
        'r.summary',
        'r.error',
        'r.owner',
        'r.createdAt',
        'r.finishedAt',
      ])
      .orderBy('r.fire_at', 'DESC')
      .addOrderBy('r.created_at', 'DESC');
    if (scope.lines) qb.andWhere('r.business_line = ANY(:lines)', { lines: scope.lines });
    if (q.businessLine) qb.andWhere('r.business_line = :bl', { bl: q.businessLine });
    if (q.model) qb.andWhere('r.model_name = :model', { model: q.model });
    if (q.status) qb.andWhere('r.status = :status', { status: q.status });
    const [items, total] = await qb
      .skip((q.page - 1) * q.pageSize)
      .take(q.pageSize)
      .getManyAndCount();
    return { items, total, page: q.page, pageSize: q.pageSize };
  }

  private async find(id: string, scope: RequestScope, withHtml = false): Promise<ReportEntity> {
    const qb = this.ds.getRepository(ReportEntity).createQueryBuilder('r').where('r.id = :id', { id });
    if (withHtml) qb.addSelect('r.html');
    const r = await qb.getOne();
    if (!r || !canSeeLine(scope, r.businessLine)) throw new NotFoundError('report', id);
    return r;
  }

  async get(id: string, scope: RequestScope) {
    const r = await this.find(id, scope);
    const deliveries = await this.ds
      .getRepository(ReportDeliveryEntity)
      .find({ where: { reportId: id }, order: { createdAt: 'ASC' } });
    return { ...r, deliveries };
  }

  async html(id: string, scope: RequestScope): Promise<string> {
    const r = await this.find(id, scope, true);
    if (!r.html) throw new NotFoundError('report HTML', `${id} (the report is ${r.status})`);
    return r.html;
  }

  /** A report of the model now: the row (with its experiment's id chosen) and its run job, all or nothing. */
  async runNow(input: RunReport, scope: RequestScope) {
    requireWrite(scope, input.businessLine, 'run reports');
    const model = await latestModel(this.ds, input.model, input.businessLine, scope);
    const schedule = await this.ds
      .getRepository(ReportScheduleEntity)
      .findOneBy({ businessLine: model.businessLine, modelName: model.name });
    const scheduled = (schedule?.options ?? {}) as { subtract?: object; thresholds?: object };
    const id = randomUUID();
    const auditId = await this.ds.transaction(async (m) => {
      await m.getRepository(ReportEntity).insert({
        id,
        businessLine: model.businessLine,
        modelName: model.name,
        modelId: model.id,
        scheduleId: null,
        trigger: 'manual',
        fireAt: new Date(),
        status: 'running',
        experimentId: randomUUID(),
        options: {
          subtract: input.subtract ?? scheduled.subtract ?? {},
          thresholds: input.thresholds ?? scheduled.thresholds ?? {},
          emails: input.emails ?? schedule?.emails ?? [],
        },
        owner: scope.user,
      });
      return writeAudit(m, scope, {
        action: 'report.run',
        businessLine: model.businessLine,
        targetType: 'report',
        targetId: id,
        details: { model: model.name, version: model.version },
      });
    });
    try {
      await this.queue.enqueueReportRun(id);
    } catch (err) {
      // nothing half-written: without its job the report would never run
      await this.ds.transaction(async (m) => {
        await m.getRepository(ReportEntity).delete({ id });
        await m.getRepository(AuditLogEntity).delete({ id: auditId });
      });
      this.logger.error(`report ${id}: enqueue failed: ${(err as Error).message}`);
      throw new QueueUnavailableError(`the queue is unavailable: ${(err as Error).message}`);
    }
    return this.get(id, scope);
  }
}
