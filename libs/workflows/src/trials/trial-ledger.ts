import type { DataSource } from 'typeorm';
import { ExperimentEntity, TERMINAL_STATUSES, TrialEntity } from '@abacus/data';

/**
 * Status transitions of trials and their experiment, as guarded UPDATEs so a retried or recovered
 * job moves the same row and never revives a cancelled or finished one.
 */
export class TrialLedger {
  constructor(private readonly ds: DataSource) {}

  /** Claims the trial for this attempt; null when it must not run (cancelled, or already finished). */
  async begin(trialId: string): Promise<{ trial: TrialEntity; experiment: ExperimentEntity } | null> {
    const trial = await this.ds.getRepository(TrialEntity).findOneBy({ id: trialId });
    if (!trial) return null;
    const experiment = await this.ds.getRepository(ExperimentEntity).findOneByOrFail({ id: trial.experimentId });
    if (experiment.status === 'cancelled') {
      await this.finish(trialId, 'cancelled', {});
      return null;
    }
    const res = await this.ds
      .createQueryBuilder()
      .update(TrialEntity)
      .set({
        status: 'running',
        attempts: () => 'attempts + 1',
        startedAt: () => 'now()',
        error: null,
        errorStack: null,
        progress: 0,
      })
      .where('id = :id AND status IN (:...s)', { id: trialId, s: ['queued', 'running'] })
      .execute();
    if (!res.affected) return null;
    await this.ds
      .createQueryBuilder()
      .update(ExperimentEntity)
      .set({ status: 'running', startedAt: () => 'COALESCE(started_at, now())' })
      .where('id = :id AND status = :q', { id: experiment.id, q: 'queued' })
      .execute();
    return { trial: await this.ds.getRepository(TrialEntity).findOneByOrFail({ id: trialId }), experiment };
  }

  async progress(trial: TrialEntity, fraction: number, message: string): Promise<void> {
    await this.ds.getRepository(TrialEntity).update({ id: trial.id, status: 'running' }, { progress: fraction });
    await this.ds.query(
      `UPDATE experiments SET progress = sub.p, progress_message = $2
         FROM (SELECT avg(CASE WHEN status IN ('succeeded','failed','cancelled') THEN 1 ELSE progress END) * 0.99 AS p
                 FROM trials WHERE experiment_id = $1) sub
        WHERE id = $1 AND status = 'running'`,
      [trial.experimentId, message],
    );
  }

  /** The trials this one waits for (its children in the flow) that did not succeed. */
  async failedDependencies(trial: TrialEntity): Promise<TrialEntity[]> {
    const deps = await this.ds.getRepository(TrialEntity).findBy({ experimentId: trial.experimentId, parentSeq: trial.seq });
    return deps.filter((d) => d.status !== 'succeeded');
  }

  async isCancelled(experimentId: string): Promise<boolean> {
    const rows: { status: string }[] = await this.ds.query('SELECT status FROM experiments WHERE id = $1', [experimentId]);
    return rows[0]?.status === 'cancelled';
  }

  async finish(
    trialId: string,
    status: 'succeeded' | 'failed' | 'cancelled' | 'queued',
    fields: { metrics?: Record<string, unknown>; error?: string; errorStack?: string | null; backend?: string | null },
  ): Promise<void> {
    await this.ds
      .createQueryBuilder()
      .update(TrialEntity)
      .set({
        status,
        ...(fields.metrics ? { metrics: fields.metrics } : {}),
        ...(fields.backend !== undefined ? { backend: fields.backend } : {}),
        error: fields.error ?? null,
        errorStack: fields.errorStack ?? null,
        progress: status === 'queued' ? 0 : 1,
        finishedAt: status === 'queued' ? null : () => 'now()',
      })
      .where('id = :id AND status NOT IN (:...t)', { id: trialId, t: TERMINAL_STATUSES })
      .execute();
  }

  /** Back to the queue at worker shutdown: the attempt it had begun does not count. */
  async release(trialId: string, reason: string): Promise<void> {
    await this.ds
      .createQueryBuilder()
      .update(TrialEntity)
      .set({ status: 'queued', attempts: () => 'GREATEST(attempts - 1, 0)', error: reason, errorStack: null, progress: 0 })
      .where('id = :id AND status = :running', { id: trialId, running: 'running' })
      .execute();
  }
}
