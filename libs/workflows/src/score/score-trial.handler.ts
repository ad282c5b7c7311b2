import type { DataSource } from 'typeorm';
import { FeatureResultEntity, SampleSetEntity } from '@abacus/data';
import { SampleSetData, type DataDir } from '@abacus/catalog';
import type { JobContext, JobName, JobPayloads } from '@abacus/queue';
import { DEFAULT_DUCKDB_MEMORY_MB } from '@abacus/scoring';
import { runTrial } from '../trials/trial-runner';
import type { TrialLedger } from '../trials/trial-ledger';
import { scoreTrialParamsSchema } from './score-experiment.schema';
import { scoreOffThread } from './score-thread';
import { buildGate, sampleBuildsRunning, waitForBuilds } from '../model/build-gate';

/** One `score` trial: WOE/IV and PSI of its share of the features, upserted per (experiment, feature, scorer). */
/** DuckDB memory a scoring thread gets at least (the job's cap is raised to give every thread this much) */
export const SCORE_THREAD_MIN_MB = 128;
/** how long a score trial waits, at most, for the sample builds running in its worker (ABACUS_SCORE_BUILD_WAIT_MS) */
export const DEFAULT_SCORE_BUILD_WAIT_MS = 120_000;
/** the largest scoring (rows x features) that waits for builds (ABACUS_SCORE_BUILD_WAIT_CELLS) */
export const DEFAULT_SCORE_BUILD_WAIT_CELLS = 200_000_000;

export class ScoreTrialHandler {
  constructor(
    private readonly ds: DataSource,
    private readonly ledger: TrialLedger,
    private readonly dataDir: DataDir,
    /**
     * threads: worker threads the columns are scored on (see scoreOffThread) beside other work (a
     * subtract's scoring runs beside its base trial's sample build); threadsAlone: those of a `score`
     * experiment's trial when no sample build runs in this process (default `threads`); duckdbMemoryMb: DuckDB's
     * memory cap for the whole trial (shared out among the threads; past it DuckDB spills to the data
     * directory's tmp/); data: where a set registered by reference is read (the host's cache of the store);
     * buildWaitMs: how long the scoring waits, at most, for the sample builds running in this process
     * (before it starts and between columns: a subtract's scoring then runs beside its base model's fit,
     * not its build), where the set's rows x the features scored are at most buildWaitCells; 0: it
     * scores beside them
     */
    private readonly opts: {
      threads: number;
      threadsAlone?: number;
      duckdbMemoryMb?: number;
      data?: SampleSetData;
      buildWaitMs?: number;
      buildWaitCells?: number;
    } = {
      threads: 1,
    },
  ) {}

  handle(payload: JobPayloads[JobName.ScoreTrial], ctx: JobContext) {
    return runTrial(this.ledger, payload, ctx, async ({ trial, experiment, checkpoint, progress, signal }) => {
      const params = scoreTrialParamsSchema.parse(trial.params);
      const ss = await this.ds.getRepository(SampleSetEntity).findOneByOrFail({ id: params.sampleSetId });
      // a small scoring (rows x features up to buildWaitCells) waits for the builds of this worker first
      // (a subtract's base trial's, another experiment's): it then runs beside the base model's fit, and
      // the build has the cores; a large one starts at once beside the build, since after it, beside the
      // fit, it would outlast the fit and hold the prune up (bench/README.md, 2026-11-29 morning)
      const cells = ss.rowCount * params.features.length;
      const maxWaitMs =
        cells <= (this.opts.buildWaitCells ?? DEFAULT_SCORE_BUILD_WAIT_CELLS)
          ? (this.opts.buildWaitMs ?? DEFAULT_SCORE_BUILD_WAIT_MS)
          : 0;
      let buildWaitMs = 0;
      if (maxWaitMs > 0 && sampleBuildsRunning() > 0) {
        await progress(0.02, 'waiting for the sample build to finish');
        buildWaitMs = await waitForBuilds(buildGate(), maxWaitMs, () => signal.aborted);
        checkpoint();
      }
      // every core for a score experiment's own scoring, when no build runs; else the share a build leaves
      const alone = experiment.kind === 'score' && sampleBuildsRunning() === 0;
      const threads = alone ? (this.opts.threadsAlone ?? this.opts.threads) : this.opts.threads;
      await progress(0.05, `reading ${params.features.length} feature(s) of ${ss.name}`);
      const time = params.psiSplitTime !== null ? ss.timeColumn : null;
      const columns = [...params.features, ss.labelColumn, ...(time ? [time] : [])];
      const opened = await (this.opts.data ?? new SampleSetData(this.dataDir, null, null)).open(
        ss,
        (f, m) => void progress(0.05 + 0.2 * f, m),
      );
      let scored: Awaited<ReturnType<typeof scoreOffThread>>;
      try {
        // on worker threads where the build has them: the main thread stays free for the trials beside
        scored = await scoreOffThread(
          {
            file: opened.path,
            columns,
            options: {
              label: ss.labelColumn,
              positive: params.positive,
              time: time ?? undefined,
              testFrom: params.psiSplitTime ?? undefined,
              prebins: params.binning.prebins,
              maxBins: params.binning.maxBins,
              minBinShare: params.binning.minBinShare,
              minCategoryShare: params.binning.minCategoryShare,
              smoothing: params.binning.smoothing,
            },
            ...(maxWaitMs - buildWaitMs > 0 ? { builds: { gate: buildGate(), maxWaitMs: maxWaitMs - buildWaitMs } } : {}),
            // the cap is shared out among the scoring threads: at least SCORE_THREAD_MIN_MB each
            duckdb: {
              memoryLimitMb: Math.max(
                this.opts.duckdbMemoryMb ?? DEFAULT_DUCKDB_MEMORY_MB,
                SCORE_THREAD_MIN_MB * Math.min(threads, params.features.length),
              ),
              tempDir: this.dataDir.tmpDir(),
            },
          },
          {
            signal,
            read: async () => {
              checkpoint();
              await progress(0.3, `scoring ${params.features.length} feature(s)`);
            },
            column: async (done, of) => {
              checkpoint();
              if (done % 10 === 0) await progress(0.3 + (0.6 * done) / of, `scored ${done} of ${of} feature(s)`);
            },
          },
          undefined,
          threads,
        );
      } finally {
        opened.release();
      }
      const { report, rows: rowCount, readMs, scoreMs, ranOn } = scored;
      buildWaitMs += scored.buildWaitMs;
      const scores = report.features;
      checkpoint();
      await progress(0.9, 'writing results');
      type ResultRow = Omit<FeatureResultEntity, 'id' | 'createdAt'>;
      const rows: ResultRow[] = scores.flatMap((s) => {
        const base = {
          experimentId: experiment.id,
          trialId: trial.id,
          businessLine: experiment.businessLine,
          featureName: s.name,
          ciLow: null,
          ciHigh: null,
          rank: null,
        };
        const out: ResultRow[] = [
          {
            ...base,
            scorer: 'iv',
            value: s.iv,
            details: {
              kind: s.kind,
              trend: s.trend,
              bins: s.bins,
              woeConvention: report.woeConvention,
              smoothing: report.smoothing,
            },
          },
        ];
        if (s.psi !== undefined && Number.isFinite(s.psi)) {
          out.push({ ...base, scorer: 'psi', value: s.psi, details: { kind: s.kind, splitTime: params.psiSplitTime } });
        }
        return out;
      });
      const t0 = Date.now();
      await this.ds.transaction(async (m) => {
        await m
          .createQueryBuilder()
          .insert()
          .into(FeatureResultEntity)
          .values(rows as never[])
          .orUpdate(['trial_id', 'value', 'ci_low', 'ci_high', 'rank', 'details'], ['experiment_id', 'feature_name', 'scorer'])
          .execute();
      });
      const top = [...scores].sort((a, b) => b.iv - a.iv)[0];
      return {
        metrics: {
          features: scores.length,
          rows: rowCount,
          topFeature: top?.name ?? null,
          topIv: top?.iv ?? null,
          // buildWaitMs: waiting for this worker's sample builds (not in readMs / scoreMs)
          timings: { readMs, scoreMs, writeMs: Date.now() - t0, buildWaitMs: Math.round(buildWaitMs) },
          // where the reading and binning ran: a worker thread, or the worker's main thread
          scoredOn: ranOn,
          threads: ranOn === 'thread' ? Math.min(threads, params.features.length) : 1,
          // every core (a score experiment's trial, no sample build beside it), or the share a build leaves
          // (a subtract's scoring, beside its base model's fit once the build is done)
          threadsFor: alone ? 'alone' : 'beside other work',
          // whether it waited for this worker's sample builds (a small enough scoring; see above)
          waitsForBuilds: maxWaitMs > 0,
          // a set registered by reference: what this host fetched from the store for it (0: all cached)
          ...(ss.location ? { store: { objects: opened.objects, fetchedBytes: opened.fetchedBytes } } : {}),
        },
        backend: null,
      };
    });
  }
}
