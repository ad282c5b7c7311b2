import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import {
  DEFAULT_DUCKDB_MEMORY_MB,
  scoreFileStreaming,
  type DuckdbLimits,
  type IvReport,
  type ScoreTableOptions,
} from '@abacus/scoring';
import { waitForBuilds } from '../model/build-gate';

/** One score trial's work: WOE/IV (and PSI) per column of a sample file. */
export interface ScoreJob {
  file: string;
  columns: string[];
  options: ScoreTableOptions;
  /** DuckDB's memory cap, spill folder and threads for the whole job (shared out when it runs on several threads) */
  duckdb?: DuckdbLimits;
  /**
   * the process's count of running sample builds (build-gate.ts, shared memory): the job waits while it
   * is above 0 before its first pass and between columns, for at most maxWaitMs in all
   */
  builds?: { gate: Int32Array; maxWaitMs: number };
}

export interface ScoreOutcome {
  report: IvReport;
  rows: number;
  readMs: number;
  /** scoring time less the waits for builds */
  scoreMs: number;
  /** time spent waiting for sample builds (the longest of the job's threads) */
  buildWaitMs: number;
  /** 'thread': a worker thread did it; 'inline': the calling thread */
  ranOn: 'thread' | 'inline';
}

type Message =
  | { type: 'read'; readMs: number }
  | { type: 'column'; done: number; of: number }
  | { type: 'done'; report: IvReport; rows: number; readMs: number; scoreMs: number; buildWaitMs: number }
  | { type: 'error'; error: { name: string; message: string; stack?: string; code?: string } };

/**
 * A score job, reporting as it goes (on whichever thread runs it): DuckDB aggregates the file within the
 * job's memory cap, spilling past it, and only per-bin and per-value counts reach JavaScript, so memory
 * does not grow with the rows. `read` fires after the first pass (label, split, counts), `column` after
 * each feature; the report is the one scoring the columns read into memory gives.
 */
export async function scoreFile(
  job: ScoreJob,
  on: {
    read?: (readMs: number) => void | Promise<void>;
    column?: (done: number, of: number) => void | Promise<void>;
    stopped?: () => boolean;
  } = {},
): Promise<Omit<ScoreOutcome, 'ranOn'>> {
  // waits for the builds running in this process: before the first pass and between columns (the
  // scorer's scoreMs counts the waits after a column, not those before it starts scoring)
  let waited = 0;
  let waitedInColumns = 0;
  const gate = async (inColumns = false) => {
    if (!job.builds || waited >= job.builds.maxWaitMs) return;
    const ms = await waitForBuilds(job.builds.gate, job.builds.maxWaitMs - waited, on.stopped);
    waited += ms;
    if (inColumns) waitedInColumns += ms;
  };
  await gate();
  const { report, rows, readMs, scoreMs } = await scoreFileStreaming(job.file, job.options, {
    columns: job.columns,
    ...(job.duckdb ?? { memoryLimitMb: DEFAULT_DUCKDB_MEMORY_MB }),
    onRead: async (ms) => {
      await on.read?.(ms);
      await gate();
    },
    onColumn: async (done, of) => {
      await on.column?.(done, of);
      await gate(true);
    },
  });
  return { report, rows, readMs, scoreMs: Math.max(0, scoreMs - waitedInColumns), buildWaitMs: waited };
}

/** One of `k` threads' share of a job's DuckDB budget: the memory cap divided, and the cores. */
export function duckdbShare(limits: DuckdbLimits | undefined, k: number): DuckdbLimits {
  const whole = limits ?? { memoryLimitMb: DEFAULT_DUCKDB_MEMORY_MB };
  return {
    ...whole,
    memoryLimitMb: Math.max(1, Math.floor(whole.memoryLimitMb / k)),
    threads: Math.max(1, Math.floor((whole.threads ?? os.availableParallelism()) / k)),
  };
}

/** The compiled thread script beside this module (absent when running from the TypeScript sources). */
export function scoreThreadScript(): string | null {
  const file = path.join(__dirname, 'score-thread.js');
  return fs.existsSync(file) ? file : null;
}

/** What a score job reports as it goes, and how it is stopped. */
export interface ScoreHooks {
  read?: (readMs: number) => void | Promise<void>;
  column?: (done: number, of: number) => void | Promise<void>;
  signal?: AbortSignal;
}

/**
 * Runs a score job on worker threads, so that its passes (seconds to minutes at 1M-10M rows) leave
 * the worker's main thread to the trials beside it (a sample build, the trainings' callbacks, the job
 * locks); inline where there is no compiled thread script. With `threads` > 1 the feature columns are
 * dealt round-robin to that many threads (each with its own DuckDB, its share of the memory cap and
 * of the cores, reading its own columns and the label): every column is scored on its own, so the
 * report is the one a single thread gives (highest IV first). Errors keep their name, message and
 * code (the trial runner classifies them); `abort` rejects at once and tells the threads to stop
 * (each ends after the DuckDB pass it is in, if any).
 */
export async function scoreOffThread(
  job: ScoreJob,
  on: ScoreHooks = {},
  script: string | null = scoreThreadScript(),
  threads = 1,
): Promise<ScoreOutcome> {
  if (on.signal?.aborted) throw new Error('scoring aborted');
  if (!script) return { ...(await scoreFile(job, on)), ranOn: 'inline' };
  const shared = new Set([job.options.label, ...(job.options.time !== undefined ? [job.options.time] : [])]);
  const features = job.columns.filter((c) => !shared.has(c));
  const k = Math.max(1, Math.min(Math.floor(threads), features.length));
  if (k === 1) return onThread(job, on, script);
  const parts = Array.from({ length: k }, (_, i) => features.filter((_, j) => j % k === i));
  const jobs = parts.map((cols) => ({
    ...job,
    columns: [...cols, ...job.columns.filter((c) => shared.has(c))],
    duckdb: duckdbShare(job.duckdb, k),
  }));
  // one abort for all: a thread that fails (or a callback that throws) ends the others
  const stop = new AbortController();
  const abort = () => stop.abort();
  on.signal?.addEventListener('abort', abort);
  let read = 0;
  let readMs = 0;
  const done = new Array<number>(k).fill(0);
  try {
    const outs = await Promise.all(
      jobs.map((j, i) =>
        onThread(
          j,
          {
            signal: stop.signal,
            read: (ms) => {
              readMs = Math.max(readMs, ms);
              read += 1;
              return read === k ? on.read?.(readMs) : undefined;
            },
            column: (d) => {
              done[i] = d;
              return on.column?.(
                done.reduce((a, b) => a + b, 0),
                features.length,
              );
            },
          },
          script,
        ).catch((err: unknown) => {
          stop.abort();
          throw err;
        }),
      ),
    );
    const first = outs[0];
    // the report's own order (scoreTableAsync): highest IV first, ties by name
    const merged = outs.flatMap((o) => o.report.features).sort((a, b) => b.iv - a.iv || (a.name < b.name ? -1 : 1));
    return {
      report: { ...first.report, features: merged },
      rows: first.rows,
      readMs: Math.max(...outs.map((o) => o.readMs)),
      scoreMs: Math.max(...outs.map((o) => o.scoreMs)),
      buildWaitMs: Math.max(...outs.map((o) => o.buildWaitMs)),
      ranOn: 'thread',
    };
  } catch (err) {
    if (on.signal?.aborted) throw new Error('scoring aborted');
    throw err;
  } finally {
    on.signal?.removeEventListener('abort', abort);
  }
}

/** One score job on one worker thread. */
async function onThread(job: ScoreJob, on: ScoreHooks, script: string): Promise<ScoreOutcome> {
  if (on.signal?.aborted) throw new Error('scoring aborted');
  const worker = new Worker(script, { workerData: { abacusScoreJob: job } });
  // a thread is told to stop (at its next column) and ends on its own, never terminated from outside:
  // that would tear its DuckDB down under a running read, and the process with it
  const stop = () => worker.postMessage({ type: 'stop' });
  let rejectNow: ((err: Error) => void) | null = null;
  const abort = () => {
    stop();
    rejectNow?.(new Error('scoring aborted'));
  };
  on.signal?.addEventListener('abort', abort);
  try {
    return await new Promise<ScoreOutcome>((resolve, reject) => {
      let settled = false;
      const settle = (f: () => void) => {
        if (!settled) {
          settled = true;
          f();
        }
      };
      rejectNow = (err) => settle(() => reject(err));
      // a callback that throws (a cancelled trial's checkpoint) ends the thread with that error
      const call = (f: (() => void | Promise<void>) | undefined) => {
        if (!f) return;
        Promise.resolve()
          .then(f)
          .catch((err: unknown) => {
            settle(() => reject(err));
            stop();
          });
      };
      worker.on('message', (m: Message) => {
        if (m.type === 'read') call(on.read && (() => on.read!(m.readMs)));
        else if (m.type === 'column') call(on.column && (() => on.column!(m.done, m.of)));
        else if (m.type === 'done')
          settle(() =>
            resolve({ report: m.report, rows: m.rows, readMs: m.readMs, scoreMs: m.scoreMs, buildWaitMs: m.buildWaitMs, ranOn: 'thread' }),
          );
        else {
          const e = Object.assign(new Error(m.error.message), m.error.code ? { code: m.error.code } : {});
          e.name = m.error.name;
          if (m.error.stack) e.stack = m.error.stack;
          settle(() => reject(e));
        }
      });
      worker.on('error', (err) => settle(() => reject(err)));
      worker.on('exit', (code) =>
        settle(() => reject(new Error(on.signal?.aborted ? 'scoring aborted' : `the scoring thread exited (code ${code}) without a result`))),
      );
    });
  } finally {
    on.signal?.removeEventListener('abort', abort);
  }
}

/** The nice value of a scoring thread on Linux: below the build's and the training's threads. */
export const SCORE_THREAD_NICE = 10;

/** Lowers the calling thread's priority on Linux (per-thread there; elsewhere it would be the process's: left alone). */
export function lowerThreadPriority(nice = SCORE_THREAD_NICE): boolean {
  if (process.platform !== 'linux' || isMainThread) return false;
  try {
    os.setPriority(0, Math.max(os.getPriority(0), nice));
    return true;
  } catch {
    // not permitted: run at the priority it has
    return false;
  }
}

// the thread's side: run the job handed over in workerData, post progress and the outcome
const handed = (workerData as { abacusScoreJob?: ScoreJob } | null)?.abacusScoreJob;
if (!isMainThread && parentPort && handed) {
  const port = parentPort;
  let stopped = false;
  port.on('message', (m: { type?: string }) => {
    if (m.type === 'stop') stopped = true;
  });
  // listening does not keep the thread alive: it ends when its scoring does
  port.unref();
  // scoring runs beside the sample build and training it does not hold up: on Linux, where a nice
  // value is a thread's own, this thread (and the DuckDB threads it starts, which inherit it) yields
  // the cores to them
  lowerThreadPriority();
  const check = () => {
    if (stopped) throw new Error('scoring stopped');
  };
  scoreFile(handed, {
    read: (readMs) => {
      check();
      port.postMessage({ type: 'read', readMs } satisfies Message);
    },
    column: (done, of) => {
      check();
      port.postMessage({ type: 'column', done, of } satisfies Message);
    },
    stopped: () => stopped,
  }).then(
    (r) => port.postMessage({ type: 'done', ...r } satisfies Message),
    (err: unknown) => {
      const e = err instanceof Error ? err : new Error(String(err));
      const code = (e as { code?: unknown }).code;
      port.postMessage({
        type: 'error',
        error: { name: e.name, message: e.message, stack: e.stack, ...(typeof code === 'string' ? { code } : {}) },
      } satisfies Message);
    },
  );
}
