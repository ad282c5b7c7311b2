import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { SampleBuildError } from './sample-build.error';
import { encodeRange, openPlan, type BuildPlan, type EncodedRange } from './sample-builder';

/** What a build thread is handed (workerData.abacusBuildJob). */
export interface BuildThreadJob {
  plan: BuildPlan;
  ranges: number[];
  memoryMb: number;
}

/** What a build thread posts: a range (its arrays handed over), the end, or its error. */
export type BuildThreadMessage =
  | { type: 'range'; range: EncodedRange }
  | { type: 'done' }
  | { type: 'error'; error: { name: string; message: string; stack?: string; field?: string; reason?: string } };

/** What a build thread is told: go on with the next range, or stop at the next chunk (another failed). */
export type BuildThreadCommand = { type: 'ack' } | { type: 'stop' };

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
  const workers: Worker[] = [];
  const stopAll = () => {
    // a thread is told to stop and ends on its own, never terminated from outside: that would tear
    // its DuckDB down under a running query (and the process with it)
    for (const w of workers) w.postMessage({ type: 'stop' } satisfies BuildThreadCommand);
  };
  try {
    await Promise.all(
      Array.from({ length: k }, (_, t) => {
        const job: BuildThreadJob = {
          plan,
          ranges: plan.ranges.map((_, i) => i).filter((i) => i % k === t),
          memoryMb: Math.max(64, Math.floor(memoryMb / k)),
        };
        return new Promise<void>((resolve, reject) => {
          const w = new Worker(script, { workerData: { abacusBuildJob: job } });
          workers.push(w);
          let settled = false;
          const settle = (f: () => void) => {
            if (!settled) {
              settled = true;
              f();
            }
          };
          w.on('message', (m: BuildThreadMessage) => {
            if (m.type === 'range') {
              opts.onRange(m.range).then(
                () => w.postMessage({ type: 'ack' } satisfies BuildThreadCommand),
                (err: unknown) => settle(() => reject(err instanceof Error ? err : new Error(String(err)))),
              );
            } else if (m.type === 'done') settle(resolve);
            else settle(() => reject(revive(m.error)));
          });
          w.on('error', (err) => settle(() => reject(err)));
          w.on('exit', (code) =>
            settle(() => reject(new Error(`a sample build thread exited (code ${code}) without finishing`))),
          );
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
