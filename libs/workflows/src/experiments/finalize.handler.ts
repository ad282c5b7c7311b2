import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { ExperimentEntity, FeatureResultEntity, TERMINAL_STATUSES, TrialEntity } from '@abacus/data';
import type { JobPayloads, JobName } from '@abacus/queue';
import type { ExperimentPlanner } from './experiment-planner';

/** Runs after every trial of an experiment is done: sets the final status and writes the summary. */
export class FinalizeExperimentHandler {
  private readonly logger = new Logger(FinalizeExperimentHandler.name);
  private readonly planners: Map<string, ExperimentPlanner>;

  constructor(
    private readonly ds: DataSource,
    planners: ExperimentPlanner[],
  ) {
    this.planners = new Map(planners.map((p) => [p.kind, p]));
  }

  async handle(payload: JobPayloads[JobName.FinalizeExperiment]): Promise<{ status: string }> {
    const e = await this.ds.getRepository(ExperimentEntity).findOneBy({ id: payload.experimentId });
    if (!e) return { status: 'missing' };
    if (TERMINAL_STATUSES.includes(e.status)) return { status: e.status };
    const trials = await this.ds.getRepository(TrialEntity).find({ where: { experimentId: e.id }, order: { seq: 'ASC' } });
    const unfinished = trials.filter((t) => !TERMINAL_STATUSES.includes(t.status));
    if (unfinished.length) {
      // a trial job vanished without finishing its row (should not happen): fail loudly rather than hang
      this.logger.error(`experiment ${e.id}: ${unfinished.length} trial(s) never finished`);
    }
    const failed = trials.filter((t) => t.status === 'failed' || !TERMINAL_STATUSES.includes(t.status));
    const results = await this.ds.getRepository(FeatureResultEntity).findBy({ experimentId: e.id });
    let status: 'succeeded' | 'failed' = failed.length ? 'failed' : 'succeeded';
    let result: Record<string, unknown> | null = null;
    let error: string | null = failed.length
      ? `${failed.length} of ${trials.length} trial(s) failed: ${failed.map((t) => t.error ?? t.status).join('; ')}`
      : null;
    if (status === 'succeeded') {
      try {
        const planner = this.planners.get(e.kind);
        if (!planner) throw new Error(`no planner for kind ${e.kind}`);
        result = planner.summarize(e, trials, results);
      } catch (err) {
        status = 'failed';
        error = `summary failed: ${(err as Error).message}`;
      }
    }
    await this.ds
      .createQueryBuilder()
      .update(ExperimentEntity)
      .set({ status, result, error, progress: 1, progressMessage: status, finishedAt: () => 'now()' })
      .where('id = :id AND status NOT IN (:...t)', { id: e.id, t: TERMINAL_STATUSES })
      .execute();
    this.logger.log(`experiment ${e.id} ${status}`);
    return { status };
  }
}
