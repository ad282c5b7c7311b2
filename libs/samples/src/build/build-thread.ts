import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { EncodedSplit } from './sample-build.types';
import { encodeRange, openPlan, type EncodedRange } from './sample-builder';
import type { BuildThreadCommand, BuildThreadJob, BuildThreadMessage } from './range-threads';

/** The typed arrays of a range, handed over (not copied) to the thread that asked. */
function buffersOf(r: EncodedRange): ArrayBuffer[] {
  const arrays: ArrayBufferView[] = [];
  const add = (s: EncodedSplit) => {
    arrays.push(s.numeric, s.labels, ...s.slots.flatMap((x) => [x.ids, x.offsets]), ...Object.values(s.keys ?? {}));
  };
  add(r.train);
  add(r.test);
  return [...new Set(arrays.map((a) => a.buffer as ArrayBuffer))];
}

// a sample build thread: encode the ranges handed over, one at a time, each posted and acknowledged
// before the next (so a thread holds at most two ranges)
const job = (workerData as { abacusBuildJob?: BuildThreadJob } | null)?.abacusBuildJob;
if (!isMainThread && parentPort && job) {
  const port = parentPort;
  let stop = false;
  let ack: (() => void) | null = null;
  port.on('message', (m: BuildThreadCommand) => {
    if (m.type === 'stop') stop = true;
    const a = ack;
    ack = null;
    a?.();
  });
  const run = async () => {
    const db = await openPlan(job.plan, job.memoryMb);
    try {
      for (const index of job.ranges) {
        if (stop) throw new Error('sample build stopped');
        const range = await encodeRange(db.con, job.plan, index, () => stop);
        const acked = new Promise<void>((resolve) => (ack = resolve));
        port.postMessage({ type: 'range', range } satisfies BuildThreadMessage, buffersOf(range));
        await acked;
      }
    } finally {
      db.close();
    }
  };
  run()
    .then(
      () => port.postMessage({ type: 'done' } satisfies BuildThreadMessage),
      (err: unknown) => {
        const e = err instanceof Error ? err : new Error(String(err));
        const { field, reason } = e as { field?: unknown; reason?: unknown };
        port.postMessage({
          type: 'error',
          error: {
            name: e.name,
            message: e.message,
            stack: e.stack,
            ...(typeof field === 'string' ? { field } : {}),
            ...(typeof reason === 'string' ? { reason } : {}),
          },
        } satisfies BuildThreadMessage);
      },
    )
    // the listener kept the thread alive while it waited for acknowledgements; now it may end
    .finally(() => port.unref());
}
