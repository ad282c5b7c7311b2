import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnrecoverableError } from 'bullmq';
import { JobName, QueueName, QueueService, WorkerHost, fitCheckJobId, type FitCheckJob, type JobContext } from '@abacus/queue';
import { createTestEnv, type TestEnv } from '../support/test-env';

// A prune's checks as fit.check jobs (QueueService.runFitChecks) on the real Redis: the workers here
// fit nothing (the fitting is the subtract tests'); what is checked is the queue's side: every
// check reaches one worker once, a check asked for again is not fitted again, a failed one is
// retried when asked again, and an abort withdraws the checks nobody took.

let env: TestEnv;
let queue: QueueService;

beforeAll(async () => {
  env = await createTestEnv();
  queue = new QueueService(env.config);
}, 60_000);

afterAll(async () => {
  await queue?.close();
  await env?.teardown();
});

const onlyFits = Object.values(QueueName).filter((q) => q !== QueueName.Fits);

/** a worker host on the CPU fits queue whose handler answers with `fn` (and counts its calls per check) */
function host(name: string, fn: (p: FitCheckJob, ctx: JobContext) => Promise<unknown>, calls: Map<string, number>) {
  return new WorkerHost(
    env.config,
    {
      [JobName.FitCheck]: async (p, ctx) => {
        const key = `${p.set.join('+')}@${p.seed}`;
        calls.set(key, (calls.get(key) ?? 0) + 1);
        return { ...((await fn(p, ctx)) as object), worker: name };
      },
    },
    onlyFits,
    { fits: 2 },
  );
}

const checks = (trialId: string, sets: string[][], seeds: number[]): FitCheckJob[] =>
  sets.flatMap((set) => seeds.map((seed) => ({ experimentId: randomUUID(), trialId, set, seed })));

describe('fit.check jobs', () => {
  it('runs every check once over the workers, in the checks order, and does not fit a check asked for again', async () => {
    const calls = new Map<string, number>();
    const answer = async (p: FitCheckJob) => {
      await new Promise((r) => setTimeout(r, 20));
      return { auc: p.seed / 1000 + p.set.length };
    };
    const hosts = [host('a', answer, calls), host('b', answer, calls)];
    for (const h of hosts) h.start();
    try {
      const trialId = randomUUID();
      const asked = checks(trialId, [[], ['x'], ['x', 'y']], [1, 2, 3]);
      const r = (await queue.runFitChecks(false, asked)) as { auc: number; worker: string }[];
      expect(r.map((x) => x.auc)).toEqual(asked.map((c) => c.seed / 1000 + c.set.length));
      expect([...calls.values()]).toEqual(Array(9).fill(1));
      expect(new Set(r.map((x) => x.worker))).toEqual(new Set(['a', 'b']));
      // asked again (a retried prune; the set in another order): the same results, nothing fitted again
      const again = asked.map((c) => ({ ...c, set: [...c.set].reverse() }));
      expect(((await queue.runFitChecks(false, again)) as { auc: number }[]).map((x) => x.auc)).toEqual(r.map((x) => x.auc));
      expect([...calls.values()]).toEqual(Array(9).fill(1));
      expect(fitCheckJobId(asked[7]!)).toBe(fitCheckJobId(again[7]!));
      expect(fitCheckJobId(asked[7]!)).not.toBe(fitCheckJobId({ ...asked[7]!, seed: 9 }));
    } finally {
      for (const h of hosts) await h.stop(500);
    }
  });

  it('fails with the failing check, and retries it when asked again', async () => {
    const calls = new Map<string, number>();
    let failOnce = true;
    const h = host(
      'a',
      async (p) => {
        if (p.set.includes('bad') && failOnce) {
          failOnce = false;
          throw new UnrecoverableError('fit check: bad not inputs of the model');
        }
        return { auc: 0.5 };
      },
      calls,
    );
    h.start();
    try {
      const asked = checks(randomUUID(), [['ok'], ['bad']], [1]);
      await expect(queue.runFitChecks(false, asked)).rejects.toThrow(/bad not inputs of the model/);
      const r = (await queue.runFitChecks(false, asked)) as { auc: number }[];
      expect(r.map((x) => x.auc)).toEqual([0.5, 0.5]);
      expect(calls.get('ok@1')).toBe(1);
      expect(calls.get('bad@1')).toBe(2);
    } finally {
      await h.stop(500);
    }
  });

  it('an abort withdraws the checks no worker took: none is left queued', async () => {
    // no worker listens: every check waits
    const controller = new AbortController();
    const asked = checks(randomUUID(), [['x'], ['y']], [1, 2]);
    const run = queue.runFitChecks(false, asked, controller.signal);
    setTimeout(() => controller.abort(new Error('experiment cancelled')), 300);
    await expect(run).rejects.toThrow(/experiment cancelled/);
    const counts = await queue.queue(QueueName.Fits).getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    expect(counts).toMatchObject({ waiting: 0, active: 0, delayed: 0, prioritized: 0 });
  });
});
