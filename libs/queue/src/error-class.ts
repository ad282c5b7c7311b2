import { UnrecoverableError } from 'bullmq';

export type ErrorClass = 'transient' | 'deterministic';

export interface Classification {
  kind: ErrorClass;
  /** what decided it, for the log */
  reason: string;
}

/** Socket-level codes of a lost or refused connection: the next attempt may find the peer back. */
const TRANSIENT_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTCONN',
  'ENOMEM',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Postgres SQLSTATEs that say "try again": connection exceptions (08), insufficient resources (53),
 * operator intervention such as a restart (57P01-57P03), serialization failure and deadlock.
 */
const TRANSIENT_SQLSTATE = /^(08...|53...|57P0[123]|40001|40P01)$/;

/** Messages of errors that carry no code: lost Postgres/Redis connections, out of memory, stalled jobs. */
const TRANSIENT_MESSAGES: RegExp[] = [
  /\b(ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN)\b/,
  /Connection terminated/i,
  /connection timeout/i,
  /timeout exceeded when trying to connect/i,
  /terminating connection due to administrator command/i,
  /the database system is (starting up|shutting down|in recovery mode)/i,
  /Connection is closed/i,
  /MaxRetriesPerRequest/i,
  /\bLOADING\b.*dataset in memory/i,
  /out of memory/i,
  /std::bad_alloc/,
  /Array buffer allocation failed/i,
  /job stalled/i,
  // the job vanished from Redis under a running trial (restart without persistence): the reaper re-queues it
  /missing (lock|key) for job/i,
  // a sticky GPU fault (the runtime's tag): this process can no longer use the GPU; a fresh one can
  /\[cuda-context-lost\]/,
];

/** Error names that are transient whatever the message says (ioredis and BullMQ). */
const TRANSIENT_NAMES = new Set(['MaxRetriesPerRequestError', 'TransientError', 'DeviceFaultError']);

/** A failure the job's own code knows is worth retrying (e.g. a webhook receiver that did not answer 2xx). */
export class TransientError extends Error {
  override name = 'TransientError';
}

function codeOf(err: object): string | undefined {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** The error itself, then what it wraps (Error.cause, TypeORM's driverError, AggregateError's errors). */
function chain(err: unknown, depth = 0): object[] {
  if (!err || typeof err !== 'object' || depth > 5) return [];
  const out: object[] = [err];
  const e = err as { cause?: unknown; driverError?: unknown; errors?: unknown };
  out.push(...chain(e.cause, depth + 1), ...chain(e.driverError, depth + 1));
  if (Array.isArray(e.errors)) for (const inner of e.errors) out.push(...chain(inner, depth + 1));
  return out;
}

/**
 * Whether a failed job is worth another attempt. Transient: lost connections (socket codes, Postgres
 * connection SQLSTATEs, ioredis), out of memory, stalled jobs. Everything else is deterministic:
 * the same input fails the same way again (bad data, a bug such as a TypeError or RangeError, zod
 * and runtime validation errors, domain errors), so retrying only delays the answer. Unknown errors
 * default to deterministic for the same reason; a transient failure that slips through costs one
 * resubmission, while a deterministic one retried costs every attempt's backoff and run time.
 */
export function classifyError(err: unknown): Classification {
  if (err instanceof UnrecoverableError || (err instanceof Error && err.name === 'UnrecoverableError')) {
    return { kind: 'deterministic', reason: 'marked unrecoverable' };
  }
  for (const e of chain(err)) {
    const code = codeOf(e);
    if (code && TRANSIENT_CODES.has(code)) return { kind: 'transient', reason: `code ${code}` };
    if (code && TRANSIENT_SQLSTATE.test(code)) return { kind: 'transient', reason: `SQLSTATE ${code}` };
    const name = e instanceof Error ? e.name : undefined;
    if (name && TRANSIENT_NAMES.has(name)) return { kind: 'transient', reason: name };
    const message = e instanceof Error ? e.message : typeof e === 'string' ? e : '';
    const hit = TRANSIENT_MESSAGES.find((re) => re.test(message));
    if (hit) return { kind: 'transient', reason: `message matches ${hit.source}` };
  }
  const name = err instanceof Error ? err.name : typeof err;
  return { kind: 'deterministic', reason: `${name} is not a transient error` };
}

/**
 * A GPU fault that left the worker process's CUDA context unusable (the runtime's DeviceFaultError,
 * or a native message with its tag): the worker must stop and restart; the work is retried.
 */
export function isDeviceFaultError(err: unknown): boolean {
  return chain(err).some(
    (e) => (e instanceof Error && e.name === 'DeviceFaultError') || /\[cuda-context-lost\]/.test(e instanceof Error ? e.message : ''),
  );
}

/**
 * The error to hand to BullMQ: deterministic ones become UnrecoverableError (failed at once, no
 * retry), keeping the original stack so the failed job in Redis still shows where it came from.
 */
export function toJobError(err: unknown): Error {
  const original = err instanceof Error ? err : new Error(String(err));
  if (original instanceof UnrecoverableError || classifyError(original).kind === 'transient') return original;
  const wrapped = new UnrecoverableError(original.message);
  wrapped.stack = original.stack;
  return wrapped;
}
