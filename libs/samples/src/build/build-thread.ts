import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { normalizeRequest } from './sample-build-key';
import {
  encodePart,
  type BuildThreadCommand,
  type BuildThreadJob,
  type BuildThreadMessage,
  type EncodedPart,
} from './sample-builder';

/** The typed arrays of a part, handed over (not copied) to the thread that asked. */
function buffersOf(part: EncodedPart): ArrayBuffer[] {
  const arrays: ArrayBufferView[] = [part.rid, part.test, part.labels, ...(part.groupValues ? [part.groupValues] : [])];
  for (const c of part.columns) {
    if (c.input === 'numeric') arrays.push(c.values);
    else if ('single' in c) arrays.push(c.single);
    else arrays.push(c.offsets, c.ids);
  }
  return [...new Set(arrays.map((a) => a.buffer as ArrayBuffer))];
}

// a sample build thread: encode the share of the features handed over, post progress and the part
const job = (workerData as { abacusBuildJob?: BuildThreadJob } | null)?.abacusBuildJob;
if (!isMainThread && parentPort && job) {
  const port = parentPort;
  let last = -1;
  let stop = false;
  port.on('message', (m: BuildThreadCommand) => {
    if (m.type === 'stop') stop = true;
  });
  // listening does not keep the thread alive: it ends when its build does
  port.unref();
  encodePart(normalizeRequest(job.request), job.only, {
    stopped: () => stop,
    ...(job.memoryLimitBytes !== undefined ? { memoryLimitBytes: job.memoryLimitBytes } : {}),
    onProgress: (fraction, message) => {
      // a message per percent at most
      if (Math.floor(fraction * 100) === last) return;
      last = Math.floor(fraction * 100);
      port.postMessage({ type: 'progress', fraction, message } satisfies BuildThreadMessage);
    },
  }).then(
    (part) => port.postMessage({ type: 'done', part } satisfies BuildThreadMessage, buffersOf(part)),
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
  );
}
