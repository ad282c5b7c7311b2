import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { EncodedSplit } from './sample-build.types';
import { encodeRange, openPlan, type EncodedRange } from './sample-builder';
import type { BuildThreadCommand, BuildThreadData, BuildThreadJob, BuildThreadMessage } from './range-threads';

/** The typed arrays of a range, handed over (not copied) to the thread that asked. */
function buffersOf(r: EncodedRange): ArrayBuffer[] {
  const arrays: ArrayBufferView[] = [];
  const add = (s: EncodedSplit) => {
    arrays.push(s.numeric, s.labels, ...s.slots.flatMap((x) => [x.ids, x.offsets]), ...Object.values(s.keys ?? {}), ...(s.times ? [s.times] : []));
  };
  add(r.train);
  add(r.test);
  return [...new Set(arrays.map((a) => a.buffer as ArrayBuffer))];
}

// a sample build thread: encode the ranges of a job, one at a time, each posted and acknowledged
// before the next (so a thread holds at most two ranges). A thread of a pool (abacusBuildPool) waits
// for job after job; its messages carry the job's id, so a late stop or acknowledgement of an earlier
// job never reaches the next one
const data = workerData as BuildThreadData | null;
if (!isMainThread && parentPort && (data?.abacusBuildJob || data?.abacusBuildPool)) {
  const port = parentPort;
  let current = -1;
  let stop = false;
  let ack: (() => void) | null = null;
  const post = (m: BuildThreadMessage, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer);
  const run = async (job: BuildThreadJob) => {
    const db = await openPlan(job.plan, job.memoryMb);
    try {
      for (const index of job.ranges) {
        if (stop) throw new Error('sample build stopped');
        const range = await encodeRange(db.con, job.plan, index, () => stop);
        const acked = new Promise<void>((resolve) => (ack = resolve));
        post({ type: 'range', job: job.id, range }, buffersOf(range));
        await acked;
      }
    } finally {
      db.close();
    }
  };
  const start = (job: BuildThreadJob): Promise<void> => {
    current = job.id;
    stop = false;
    ack = null;
    return run(job).then(
      () => post({ type: 'done', job: job.id }),
      (err: unknown) => {
        const e = err instanceof Error ? err : new Error(String(err));
        const { field, reason } = e as { field?: unknown; reason?: unknown };
        post({
          type: 'error',
          job: job.id,
          error: {
            name: e.name,
            message: e.message,
            stack: e.stack,
            ...(typeof field === 'string' ? { field } : {}),
            ...(typeof reason === 'string' ? { reason } : {}),
          },
        });
      },
    );
  };
  port.on('message', (m: BuildThreadCommand) => {
    if (m.type === 'job') {
      void start(m.job);
      return;
    }
    if (m.job !== current) return;
    if (m.type === 'stop') stop = true;
    const a = ack;
    ack = null;
    a?.();
  });
  // a one-job thread ends once its job is over (the listener kept it alive while it waited for
  // acknowledgements); a pool's thread waits for the next job
  if (data.abacusBuildJob) void start(data.abacusBuildJob).finally(() => port.unref());
}
