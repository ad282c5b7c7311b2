/**
 * The sample builds running in this process, counted in shared memory so that the scoring threads of a
 * trial (worker threads) can wait for them: IV scoring reads every column of a sample file on every
 * core it is given, and beside a build it takes the cores (and, on a host with SMT, the core siblings)
 * the build's encoding threads need. A subtract's IV is not on its critical path while the base model
 * builds and fits, so it waits for the builds and runs beside the fit instead (see ScoreTrialHandler).
 */
const counter = new Int32Array(new SharedArrayBuffer(4));

/** Atomics.waitAsync (Node 16+; its type is in the ES2024 library, past the project's ES2023) */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(
      a: Int32Array,
      i: number,
      v: number,
      timeoutMs: number,
    ): { async: false; value: string } | { async: true; value: Promise<string> };
  }
).waitAsync;

/** the shared counter (handed to scoring threads) */
export function buildGate(): Int32Array {
  return counter;
}

/** How many sample builds this process runs now: work that would take their cores waits for none. */
export function sampleBuildsRunning(): number {
  return Atomics.load(counter, 0);
}

/** A build starts: `done` (call it once) when it ends, however it ends. */
export function buildStarted(): () => void {
  Atomics.add(counter, 0, 1);
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    Atomics.sub(counter, 0, 1);
    Atomics.notify(counter, 0);
  };
}

/**
 * Waits while `gate` counts running builds, for at most `maxMs` in all (a build that takes hours does
 * not hold scoring back past it: then it runs beside the build, as before), or until `stopped()`.
 * Returns the milliseconds waited. Works on the main thread and on worker threads (Atomics.waitAsync).
 */
export async function waitForBuilds(gate: Int32Array, maxMs: number, stopped?: () => boolean): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const n = Atomics.load(gate, 0);
    const left = maxMs - (performance.now() - t0);
    if (n <= 0 || left <= 0 || stopped?.()) break;
    const step = Math.min(100, left);
    const r = waitAsync(gate, 0, n, step);
    if (!r.async) continue;
    // a pending Atomics.waitAsync does not keep a thread's event loop alive (a scoring thread whose
    // port is unref'd would end): a timer does, for as long as the wait
    const hold = setTimeout(() => undefined, step + 50);
    try {
      await r.value;
    } finally {
      clearTimeout(hold);
    }
  }
  return performance.now() - t0;
}
