import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import {
  ConflictError,
  InvalidInputError,
  NotFoundError,
  canSeeLine,
  requireRole,
  requireWrite,
  type Page,
  type RequestScope,
} from '@abacus/core';
import { writeAudit } from '@abacus/access';
import {
  AuditLogEntity,
  BusinessLineEntity,
  ExperimentEntity,
  FeatureResultEntity,
  TERMINAL_STATUSES,
  TrialEntity,
} from '@abacus/data';
import type { QueueService } from '@abacus/queue';
import type { ExperimentPlanner } from './experiment-planner';
import type { CreateExperiment, ExperimentListQuery } from './experiment.schemas';

export class QueueUnavailableError extends Error {}

export interface ExperimentDetail extends ExperimentEntity {
  trials: TrialEntity[];
}

/** Creates experiments (rows + BullMQ flow, all or nothing), lists, shows and cancels them. */
export class ExperimentService {
  private readonly logger = new Logger(ExperimentService.name);
  private readonly planners: Map<string, ExperimentPlanner>;

  constructor(
    private readonly ds: DataSource,
    private readonly queue: QueueService,
    planners: ExperimentPlanner[],
  ) {
    this.planners = new Map(planners.map((p) => [p.kind, p]));
  }

  planner(kind: string): ExperimentPlanner {
    const p = this.planners.get(kind);
    if (!p) throw new InvalidInputError('kind', `unknown experiment kind "${kind}"`);
    return p;
  }

  /** `opts.id`: the id to give it (a report run chooses its experiment's id up front, so a rerun finds it). */
  async create(input: CreateExperiment, scope: RequestScope, opts: { id?: string } = {}): Promise<ExperimentDetail> {
    requireWrite(scope, input.businessLine, 'submit experiments');
    if (!(await this.ds.getRepository(BusinessLineEntity).existsBy({ name: input.businessLine }))) {
      throw new InvalidInputError('businessLine', `unknown business line "${input.businessLine}"`);
    }
    const plan = await this.planner(input.kind).plan(input as never, this.ds, scope);
    const id = opts.id ?? randomUUID();
    const trials = plan.trials.map((t, seq) => ({ ...t, id: randomUUID(), seq }));
    const auditId = await this.ds.transaction(async (m) => {
      await m.getRepository(ExperimentEntity).insert({
        id,
        kind: input.kind,
        name: input.name,
        businessLine: input.businessLine,
        owner: scope.user,
        spec: plan.spec as never,
        status: 'queued',
      });
      await m.getRepository(TrialEntity).insert(
        trials.map((t) => ({
          id: t.id,
          experimentId: id,
          businessLine: input.businessLine,
          owner: scope.user,
          kind: t.kind,
          seq: t.seq,
          parentSeq: t.parent ?? null,
          params: t.params as never,
          status: 'queued' as const,
        })),
      );
      return writeAudit(m, scope, {
        action: 'experiment.submitted',
        businessLine: input.businessLine,
        targetType: 'experiment',
        targetId: id,
        details: { kind: input.kind, name: input.name, trials: trials.length },
      });
    });
    try {
      await this.queue.enqueueExperiment(
        id,
        trials.map((t) => ({ trialId: t.id, job: t.job, parent: t.parent })),
      );
    } catch (err) {
      // nothing half-written: without its jobs the experiment would never run
      await this.ds.transaction(async (m) => {
        await m.getRepository(ExperimentEntity).delete({ id });
        await m.getRepository(AuditLogEntity).delete({ id: auditId });
      });
      this.logger.error(`experiment ${id}: enqueue failed: ${(err as Error).message}`);
      throw new QueueUnavailableError(`the queue is unavailable: ${(err as Error).message}`);
    }
    this.logger.log(`experiment ${id} (${input.kind}) queued with ${trials.length} trial(s)`);
    return this.get(id, scope);
  }

  async list(scope: RequestScope, q: ExperimentListQuery): Promise<Page<ExperimentEntity>> {
    const qb = this.ds.getRepository(ExperimentEntity).createQueryBuilder('e').orderBy('e.created_at', 'DESC');
    if (scope.lines) qb.andWhere('e.business_line = ANY(:lines)', { lines: scope.lines });
    if (q.businessLine) qb.andWhere('e.business_line = :bl', { bl: q.businessLine });
    if (q.kind) qb.andWhere('e.kind = :kind', { kind: q.kind });
    if (q.status) qb.andWhere('e.status = :status', { status: q.status });
    if (q.owner) qb.andWhere('e.owner = :owner', { owner: q.owner });
    const [items, total] = await qb
      .skip((q.page - 1) * q.pageSize)
      .take(q.pageSize)
      .getManyAndCount();
    return { items, total, page: q.page, pageSize: q.pageSize };
  }

  async get(id: string, scope: RequestScope): Promise<ExperimentDetail> {
    const e = await this.ds.getRepository(ExperimentEntity).findOneBy({ id });
    if (!e || !canSeeLine(scope, e.businessLine)) throw new NotFoundError('experiment', id);
    const trials = await this.ds.getRepository(TrialEntity).find({ where: { experimentId: id }, order: { seq: 'ASC' } });
    return Object.assign(e, { trials });
  }

  async results(id: string, scope: RequestScope, scorer?: string): Promise<FeatureResultEntity[]> {
    await this.get(id, scope);
    const qb = this.ds
      .getRepository(FeatureResultEntity)
      .createQueryBuilder('r')
      .where('r.experiment_id = :id', { id })
      .orderBy('r.scorer')
      .addOrderBy('r.rank', 'ASC', 'NULLS LAST')
      .addOrderBy('r.value', 'DESC');
    if (scorer) qb.andWhere('r.scorer = :scorer', { scorer });
    return qb.getMany();
  }

  /** Marks it cancelled, removes trials not yet started; running trials notice within a second and stop. */
  async cancel(id: string, scope: RequestScope): Promise<ExperimentDetail> {
    requireRole(scope, 'engineer', 'cancel experiments');
    const e = await this.get(id, scope);
    requireWrite(scope, e.businessLine, 'cancel experiments');
    // the status change, the trials' and the audit entry together: a cancel is recorded exactly when it happened
    const pending = await this.ds.transaction(async (m) => {
      const updated = await m
        .createQueryBuilder()
        .update(ExperimentEntity)
        .set({ status: 'cancelled', finishedAt: () => 'now()', progressMessage: `cancelled by ${scope.user}` })
        .where('id = :id AND status NOT IN (:...terminal)', { id, terminal: TERMINAL_STATUSES })
        .execute();
      if (!updated.affected) throw new ConflictError(`experiment ${id} is already ${e.status}`);
      const res = await m
        .getRepository(TrialEntity)
        .createQueryBuilder()
        .update()
        .set({ status: 'cancelled', finishedAt: () => 'now()' })
        .where('experiment_id = :id AND status = :queued', { id, queued: 'queued' })
        .returning('id')
        .execute();
      await writeAudit(m, scope, {
        action: 'experiment.cancelled',
        businessLine: e.businessLine,
        targetType: 'experiment',
        targetId: id,
        details: { kind: e.kind, name: e.name, previousStatus: e.status },
      });
      return res;
    });
    const ids = (pending.raw as { id: string }[]).map((r) => r.id);
    const removed = await this.queue.removePendingTrials(ids).catch((err: Error) => {
      this.logger.warn(`experiment ${id}: could not remove queued jobs: ${err.message}`);
      return 0;
    });
    this.logger.log(`experiment ${id} cancelled (${removed} queued trial job(s) removed)`);
    return this.get(id, scope);
  }
}
