import { Logger } from '@nestjs/common';
import { PeriodicPass } from '@abacus/core';
import type { DataSource, EntityManager } from 'typeorm';
import { ExperimentEntity, TERMINAL_STATUSES, TrialEntity } from '@abacus/data';
import { JobName, QueueName, isJobName, type PlannedTrialJob, type QueueService } from '@abacus/queue';

export interface ReaperOptions {
  /** experiments younger than this are left alone: their flow may still be being enqueued */
  minAgeMs: number;
  /** a lost trial that already began this many attempts is failed instead of re-queued */
  maxAttempts: number;
}

export interface ReapReport {
  /** experiments whose flow was rebuilt from their unfinished trials */
  requeued: string[];
  /** trials failed (or cancelled) by the reaper, with the reason stored on the row */
  closedTrials: string[];
}

/** Job states in which the queue no longer runs a job (or it is gone: null). */
const GONE = new Set<string | null>([null, 'completed', 'failed', 'unknown']);

/** One key for pg_try_advisory_xact_lock: one reaper at a time however many workers run. */
const REAPER_LOCK = 0x41626163;

/**
 * Postgres is the record of what must run; Redis holds the jobs that run it. When they disagree (a
 * Redis restart without persistence drops every job, a job fails for good while Postgres is down
 * so its row is never updated) an experiment would stay queued or running forever. The reaper finds
 * those, rebuilds the flow of their unfinished trials (same job ids, so rows are updated in place)
 * or, for trials that have had all their attempts, fails them with the reason.
 */
export class ExperimentReaper {
  private readonly periodic = new PeriodicPass('reaper pass', () => this.reapOnce(), ExperimentReaper.name);

  constructor(
    private readonly ds: DataSource,
    private readonly queue: QueueService,
    private readonly opts: ReaperOptions,
  ) {}

  /** Runs a pass every intervalMs (0 = never); a pass never overlaps the previous one. */
  start(intervalMs: number): void {
    this.periodic.start(intervalMs);
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  async reapOnce(): Promise<ReapReport> {
    const report: ReapReport = { requeued: [], closedTrials: [] };
    // the lock's transaction only coordinates reapers; rows are written outside it, committed before
    // a rebuilt flow can run
    await this.ds.transaction(async (lock) => {
      const [{ locked }]: { locked: boolean }[] = await lock.query('SELECT pg_try_advisory_xact_lock($1) AS locked', [
        REAPER_LOCK,
      ]);
      if (!locked) return;
      const m = this.ds.manager;
      const open: { id: string }[] = await m.query(
        `SELECT id FROM experiments
          WHERE status IN ('queued', 'running') AND created_at < now() - make_interval(secs => $1::double precision / 1000)
          ORDER BY created_at`,
        [this.opts.minAgeMs],
      );
      for (const { id } of open) await this.inspect(m, id, report);
      await this.closeOrphanedTrials(m, report);
    });
    return report;
  }

  private async inspect(m: EntityManager, experimentId: string, report: ReapReport): Promise<void> {
    // job states first, rows second: a row is always finished before its job, so a finished job
    // beside an unfinished row read afterwards is a real loss, not a race with a worker
    const ids: string[] = (await m.query('SELECT id FROM trials WHERE experiment_id = $1', [experimentId])).map(
      (r: { id: string }) => r.id,
    );
    const finalizeState = await this.queue.jobState(QueueName.Experiments, experimentId);
    const states = new Map<string, string | null>();
    for (const id of ids) states.set(id, await this.queue.jobState(QueueName.Trials, id));
    const e = await m.getRepository(ExperimentEntity).findOneBy({ id: experimentId });
    if (!e || TERMINAL_STATUSES.includes(e.status)) return;
    const trials = await m.getRepository(TrialEntity).find({ where: { experimentId }, order: { seq: 'ASC' } });
    const unfinished = trials.filter((t) => !TERMINAL_STATUSES.includes(t.status));
    if (finalizeState === 'active' || unfinished.some((t) => states.get(t.id) === 'active')) return;
    const lost = unfinished.filter((t) => GONE.has(states.get(t.id) ?? null));
    if (!lost.length && !GONE.has(finalizeState)) return;

    const describe = (t: TrialEntity) => `${states.get(t.id) ?? 'missing'} in the queue`;
    const log = new Logger(`experiment ${experimentId}`);
    const again: TrialEntity[] = [];
    for (const t of unfinished) {
      const job = `trial.${t.kind}`;
      let reason: string | null = null;
      if (!isJobName(job) || job === JobName.FinalizeExperiment) reason = `no job runs trials of kind "${t.kind}"`;
      else if (lost.includes(t) && t.attempts >= this.opts.maxAttempts) {
        reason = `job lost after ${t.attempts} attempt(s) (${describe(t)})`;
      }
      if (reason) {
        await this.closeTrial(m, t.id, 'failed', reason);
        report.closedTrials.push(t.id);
        new Logger(`trial ${t.id} / experiment ${experimentId}`).warn(`reaper: failed: ${reason}`);
      } else again.push(t);
    }
    await this.queue.removeExperimentJobs(
      experimentId,
      unfinished.map((t) => t.id),
    );
    if (again.length) {
      await m
        .createQueryBuilder()
        .update(TrialEntity)
        .set({ status: 'queued', progress: 0 })
        .where('id IN (:...ids) AND status = :running', { ids: again.map((t) => t.id), running: 'running' })
        .execute();
    }
    const index = new Map(again.map((t, i) => [t.seq, i]));
    const plan: PlannedTrialJob[] = again.map((t) => ({
      trialId: t.id,
      job: `trial.${t.kind}` as PlannedTrialJob['job'],
      parent: t.parentSeq === null ? undefined : index.get(t.parentSeq),
    }));
    await this.queue.enqueueExperiment(experimentId, plan);
    report.requeued.push(experimentId);
    log.warn(
      `reaper: flow rebuilt with ${again.length} unfinished trial(s) (finalize ${finalizeState ?? 'missing'}; ` +
        `lost: ${lost.map((t) => `#${t.seq} ${describe(t)}`).join(', ') || 'none'})`,
    );
  }

  /** Unfinished trials of finished experiments whose job is gone: nothing will ever finish them. */
  private async closeOrphanedTrials(m: EntityManager, report: ReapReport): Promise<void> {
    const rows: { id: string; experiment_id: string; experiment_status: string }[] = await m.query(
      `SELECT t.id, t.experiment_id, e.status AS experiment_status
         FROM trials t JOIN experiments e ON e.id = t.experiment_id
        WHERE t.status IN ('queued', 'running') AND e.status IN ('succeeded', 'failed', 'cancelled')
          AND e.finished_at < now() - make_interval(secs => $1::double precision / 1000)`,
      [this.opts.minAgeMs],
    );
    for (const r of rows) {
      const state = await this.queue.jobState(QueueName.Trials, r.id);
      if (!GONE.has(state)) continue;
      const status = r.experiment_status === 'cancelled' ? 'cancelled' : 'failed';
      await this.closeTrial(m, r.id, status, `experiment already ${r.experiment_status}; job ${state ?? 'missing'} in the queue`);
      report.closedTrials.push(r.id);
    }
  }

  private async closeTrial(m: EntityManager, id: string, status: 'failed' | 'cancelled', reason: string): Promise<void> {
    await m
      .createQueryBuilder()
      .update(TrialEntity)
      .set({ status, error: reason, finishedAt: () => 'now()' })
      .where('id = :id AND status NOT IN (:...t)', { id, t: TERMINAL_STATUSES })
      .execute();
  }
}
