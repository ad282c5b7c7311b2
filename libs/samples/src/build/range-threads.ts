import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { SampleBuildError } from './sample-build.error';
import { encodeRange, openPlan, type BuildPlan, type EncodedRange } from './sample-builder';

/** What a build thread is handed: a job's ranges of a prepared build. */
export interface BuildThreadJob {
  /** unique within the process: a thread's messages name the job they are about */
  id: number;
  plan: BuildPlan;
  ranges: number[];
  memoryMb: number;
}

/** workerData of a build thread: one job (the thread ends after it), or a pool's thread (job after job). */
export interface BuildThreadData {
  abacusBuildJob?: BuildThreadJob;
  abacusBuildPool?: boolean;
}

/** What a build thread posts: a range (its arrays handed over), the end, or its error. */
export type BuildThreadMessage =
  | { type: 'range'; job: number; range: EncodedRange }
  | { type: 'done'; job: number }
  | {
      type: 'error';
      job: number;
      error: { name: string; message: string; stack?: string; field?: string; reason?: string };
    };

/**
 * What a build thread is told: a job (a pool's thread), go on with the next range, or stop at the next
 * chunk (another failed).
 */
export type BuildThreadCommand =
  { type: 'job'; job: BuildThreadJob } | { type: 'ack'; job: number } | { type: 'stop'; job: number };

let jobs = 0;

/**
 * Build threads kept from one build to the next: a thread costs a start (its isolate, the modules,
 * DuckDB's binding: a few hundred milliseconds, more than a small set's encoding) and its code runs
 * slowly until compiled, so a worker that builds again and again keeps them. An idle thread holds no
 * DuckDB and does not keep the process alive.
 */
export class BuildThreadPool {
  private readonly idle: Worker[] = [];
  private closed = false;
  private started = 0;

  constructor(
    readonly script: string,
    /** idle threads kept at most */
    public keep: number,
  ) {}

  /** threads idle now */
  get size(): number {
    return this.idle.length;
  }

  /** threads started since the pool was made */
  get spawned(): number {
    return this.started;
  }

  /** an idle thread, or a new one */
  acquire(): Worker {
    const w = this.idle.pop() ?? this.spawn();
    w.ref();
    return w;
  }

  /** a thread back after its job; one that failed, or past `keep`, is ended */
  release(w: Worker, healthy: boolean): void {
    if (!healthy || this.closed || this.idle.length >= this.keep) {
      void w.terminate();
      return;
    }
    w.unref();
    this.idle.push(w);
  }

  /** starts threads until `n` are idle (their start off the first build's path) */
  prestart(n: number): void {
    while (!this.closed && this.idle.length < Math.min(n, this.keep)) this.release(this.spawn(), true);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.idle.splice(0).map((w) => w.terminate()));
  }

  private spawn(): Worker {
    const w = new Worker(this.script, { workerData: { abacusBuildPool: true } satisfies BuildThreadData });
    this.started++;
    // a thread that ends while idle leaves the pool
    w.on('exit', () => {
      const i = this.idle.indexOf(w);
      if (i >= 0) this.idle.splice(i, 1);
    });
    return w;
  }
}

const pools = new Map<string, BuildThreadPool>();

/** The process's pool of build threads running `script` (the compiled one beside this module by default), keeping at least `keep`. */
export function buildThreadPool(keep: number, script: string | null = buildThreadScript()): BuildThreadPool | null {
  if (!script) return null;
  let pool = pools.get(script);
  if (!pool) {
    pool = new BuildThreadPool(script, keep);
    pools.set(script, pool);
  }
  pool.keep = Math.max(pool.keep, keep);
  return pool;
}

/** The compiled build-thread script beside this module (absent when running from the TypeScript sources). */
export function buildThreadScript(): string | null {
  const file = path.join(__dirname, 'build-thread.js');
  return fs.existsSync(file) ? file : null;
}

/** A thread's error as it was thrown: a SampleBuildError keeps its field and reason. */
function revive(e: Extract<BuildThreadMessage, { type: 'error' }>['error']): Error {
  const err =
    e.name === 'SampleBuildError' && e.field !== undefined
      ? new SampleBuildError(e.field, e.reason ?? e.message)
      : new Error(e.message);
  err.name = e.name;
  if (e.stack) err.stack = e.stack;
  return err;
}

export interface EncodeRangesOptions {
  /** threads the ranges are dealt among (round-robin); 1 or no script: this thread */
  threads?: number;
  /** the compiled build-thread script; default the one beside this module */
  threadScript?: string | null;
  /** run on the process's pool of build threads, kept for the next build (default true); false: threads of this build only */
  reuseThreads?: boolean;
  /** DuckDB memory (MiB) shared by the threads' read-only connections */
  duckdbMemoryMb?: number;
  /** called with every range (in no particular order) before that thread encodes its next one */
  onRange(range: EncodedRange): Promise<void>;
}

/**
 * Encodes every range of a prepared build, on worker threads where the compiled script is at hand.
 * A thread holds at most the range it encodes and the one it has handed over and waits for, so memory
 * is bounded by threads x range size, whatever the rows. The first failure stops the others.
 */
export async function encodeRanges(plan: BuildPlan, opts: EncodeRangesOptions): Promise<void> {
  const script = opts.threadScript === undefined ? buildThreadScript() : opts.threadScript;
  const k = Math.max(1, Math.min(Math.floor(opts.threads ?? 1), plan.ranges.length));
  const memoryMb = opts.duckdbMemoryMb ?? 1024;
  if (k === 1 || !script) {
    const db = await openPlan(plan, memoryMb);
    try {
      for (let r = 0; r < plan.ranges.length; r++) await opts.onRange(await encodeRange(db.con, plan, r));
    } finally {
      db.close();
    }
    return;
  }
  const pool = opts.reuseThreads === false ? null : buildThreadPool(Math.floor(opts.threads ?? 1), script);
  const running: { w: Worker; job: number }[] = [];
  const stopAll = () => {
    // a thread is told to stop and ends its job on its own, never terminated from outside: that would
    // tear its DuckDB down under a running query (and the process with it)
    for (const r of running) r.w.postMessage({ type: 'stop', job: r.job } satisfies BuildThreadCommand);
  };
  try {
    await Promise.all(
      Array.from({ length: k }, (_, t) => {
        const job: BuildThreadJob = {
          id: ++jobs,
          plan,
          ranges: plan.ranges.map((_, i) => i).filter((i) => i % k === t),
          memoryMb: Math.max(64, Math.floor(memoryMb / k)),
        };
        return new Promise<void>((resolve, reject) => {
          const w = pool ? pool.acquire() : new Worker(script, { workerData: { abacusBuildJob: job } satisfies BuildThreadData });
          running.push({ w, job: job.id });
          let settled = false;
          const settle = (f: () => void) => {
            if (!settled) {
              settled = true;
              f();
            }
          };
          // the thread's job is over (its last message, or the thread ended): the thread goes back
          const finish = (healthy: boolean) => {
            w.off('message', onMessage);
            w.off('error', onError);
            w.off('exit', onExit);
            pool?.release(w, healthy);
          };
          const onMessage = (m: BuildThreadMessage) => {
            if (m.job !== job.id) return;
            if (m.type === 'range') {
              opts.onRange(m.range).then(
                () => w.postMessage({ type: 'ack', job: job.id } satisfies BuildThreadCommand),
                (err: unknown) => settle(() => reject(err instanceof Error ? err : new Error(String(err)))),
              );
              return;
            }
            finish(true);
            if (m.type === 'done') settle(resolve);
            else settle(() => reject(revive(m.error)));
          };
          const onError = (err: Error) => {
            finish(false);
            settle(() => reject(err));
          };
          const onExit = (code: number) => {
            finish(false);
            settle(() => reject(new Error(`a sample build thread exited (code ${code}) without finishing`)));
          };
          w.on('message', onMessage);
          w.on('error', onError);
          w.on('exit', onExit);
          if (pool) w.postMessage({ type: 'job', job } satisfies BuildThreadCommand);
        }).catch((err: unknown) => {
          stopAll();
          throw err;
        });
      }),
    );
  } catch (err) {
    stopAll();
    throw err;
  }
}
