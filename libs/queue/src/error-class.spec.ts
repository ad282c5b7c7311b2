import { describe, expect, it } from 'vitest';
import { UnrecoverableError } from 'bullmq';
import { QueryFailedError } from 'typeorm';
import { z } from 'zod';
import { classifyError, isDeviceFaultError, toJobError, TransientError } from './error-class';

class LabelError extends Error {
  constructor() {
    super("label 'click' has 2 distinct value(s) (3, 7)");
    this.name = 'ScoringError';
  }
}

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });
const zodError = (() => {
  const r = z.object({ n: z.number() }).safeParse({ n: 'x' });
  if (r.success) throw new Error('expected a zod error');
  return r.error;
})();

describe('classifyError', () => {
  it.each([
    ['TypeError', new TypeError("Cannot read properties of undefined (reading 'length')")],
    ['RangeError', new RangeError('Invalid array length')],
    ['zod', zodError],
    ['runtime validation', new Error('slot user_id: offsets must have rows + 1 = 11 entries, got 3')],
    ['domain', new LabelError()],
    ['unique violation', new QueryFailedError('INSERT', [], withCode('duplicate key value', '23505'))],
    ['missing file', withCode("ENOENT: no such file or directory, open 'x.parquet'", 'ENOENT')],
    ['unknown', new Error('something odd')],
    ['a thrown string', 'boom'],
    ['unrecoverable', new UnrecoverableError('given up')],
  ])('%s is deterministic', (_what, err) => {
    expect(classifyError(err).kind).toBe('deterministic');
  });

  it.each([
    ['ECONNRESET', withCode('read ECONNRESET', 'ECONNRESET')],
    ['ECONNREFUSED', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['ETIMEDOUT', withCode('connect ETIMEDOUT', 'ETIMEDOUT')],
    [
      'Postgres restart',
      new QueryFailedError('SELECT 1', [], withCode('terminating connection due to administrator command', '57P01')),
    ],
    ['Postgres starting up', withCode('the database system is starting up', '57P03')],
    ['pg connection lost', new Error('Connection terminated unexpectedly')],
    ['ioredis', new Error('Connection is closed.')],
    ['out of memory', new RangeError('Array buffer allocation failed')],
    ['native out of memory', new Error('std::bad_alloc')],
    ['stalled', new Error('job stalled more than allowable limit')],
    ['job lost from Redis', new Error('Missing key for job 80dbceed. updateProgress')],
    ['fetch to a refused peer', new TypeError('fetch failed', { cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED') })],
  ])('%s is transient', (_what, err) => {
    expect(classifyError(err).kind).toBe('transient');
  });
});

describe('toJobError', () => {
  it('wraps deterministic errors in UnrecoverableError with the original message and stack', () => {
    const err = new TypeError('x is not a function');
    const wrapped = toJobError(err);
    expect(wrapped).toBeInstanceOf(UnrecoverableError);
    expect(wrapped.message).toBe('x is not a function');
    expect(wrapped.stack).toBe(err.stack);
  });

  it('passes transient errors through so BullMQ retries them', () => {
    const err = withCode('read ECONNRESET', 'ECONNRESET');
    expect(toJobError(err)).toBe(err);
  });

  it('a TransientError is retried whatever its message (e.g. a webhook receiver answering 503)', () => {
    const err = new TransientError('webhook d1: HTTP 503');
    expect(classifyError(err).kind).toBe('transient');
    expect(toJobError(err)).toBe(err);
  });
});

describe('GPU faults', () => {
  const native = new Error('[cuda-context-lost] device 0, cudaErrorLaunchFailure: unspecified launch failure: restart the process');
  const typed = Object.assign(new Error(native.message, { cause: native }), { name: 'DeviceFaultError' });

  it('a lost CUDA context is transient (a fresh process can do the work) and recognised wrapped or not', () => {
    for (const err of [native, typed, new Error('trial failed', { cause: typed })]) {
      expect(classifyError(err).kind).toBe('transient');
      expect(isDeviceFaultError(err)).toBe(true);
      expect(toJobError(err)).toBe(err);
    }
  });

  it('a CUDA error that leaves the context usable is not a device fault', () => {
    const oom = new Error('CUDA error in cudaMalloc(&p, n * sizeof(T)): out of memory');
    expect(isDeviceFaultError(oom)).toBe(false);
    expect(isDeviceFaultError(new Error('cublasLtMatmul failed with status 13 (FP32 product 32x430x64)'))).toBe(false);
    expect(classifyError(new Error('cublasLtMatmul failed with status 13')).kind).toBe('deterministic');
  });
});
