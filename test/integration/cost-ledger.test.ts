import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simulateWorld, writeWorld, type GroundTruth } from '@abacus/samples';
import { JobName, JobTimeoutError, QueueName, QueueService, WorkerHost } from '@abacus/queue';
import { CostMeasureHandler } from '@abacus/workflows';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { apiClient } from '../support/http';
import { cli } from '../support/processes';

/**
 * The cost ledger on a simulated world: measured storage and fan-outs against the ground truth's
 * planted costs, declared figures overriding measured ones, and features without any cost.
 */

let env: TestEnv;
let api: ApiHandle;
let truth: GroundTruth;
let sampleSetId: string;
const http = apiClient(
  () => api.url,
  () => env.adminKey,
);
const call = http.call;

interface Figure {
  value: number | null;
  unit: string;
  source: 'measured' | 'declared' | null;
  measuredAt: string | null;
  how: string | null;
  declared: number | null;
  measured: {
    value: number;
    measuredAt: string;
    how: string;
    spread?: number;
    fanOut?: number;
    median?: number;
    interval?: [number, number];
    resolution?: number;
    belowResolution?: boolean;
  } | null;
}
interface Entry {
  id: string;
  name: string;
  kind: string;
  entity: string | null;
  storage: Figure;
  communication: Figure;
  compute: Figure;
  noCost: boolean;
}

async function ok(p: Promise<{ status: number; body: any }>, status = 200): Promise<any> {
  const r = await p;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

let measured: { features: Entry[]; measurement: { measured: string[]; skipped: { name: string }[]; backend: string } };
const byName = (entries: Entry[]) => new Map(entries.map((e) => [e.name, e]));

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  const dir = path.join(env.dataDir, 'world');
  const world = simulateWorld({ seed: 11, rows: 20_000 });
  await writeWorld(world, dir);
  truth = world.groundTruth;
  await ok(call('POST', '/business-lines', { name: 'feed' }), 201);
  const ss = await http.upload('/sample-sets', path.join(dir, 'samples', 'feed.parquet'), {
    name: 'feed-samples',
    businessLine: 'feed',
    label: 'click',
    time: 'ts',
    keys: 'impression_id,user_id,item_id,context_id,domain',
  });
  expect(ss.status, JSON.stringify(ss.body)).toBe(201);
  sampleSetId = ss.body.id;
  for (const [table, key, time] of [
    ['users', 'user_id', 'ts'],
    ['items', 'item_id', ''],
    ['contexts', 'context_id', ''],
  ] as const) {
    const r = await http.upload('/feature-tables', path.join(dir, `${table}.parquet`), {
      name: table,
      businessLine: 'feed',
      entityKey: key,
      ...(time ? { time } : {}),
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  }
  measured = await ok(call('POST', '/features/costs/measure', { businessLine: 'feed', candidatesPerRequest: 50 }));
}, 600_000);

afterAll(async () => {
  await api?.close();
  await env?.teardown();
});

describe('the cost ledger on a simulated world', () => {
  it('measures storage per feature that agrees with the planted costs', () => {
    const got = byName(measured.features);
    expect(measured.measurement.skipped).toEqual([]);
    for (const t of truth.features) {
      const e = got.get(t.name)!;
      expect(e, t.name).toBeDefined();
      expect(e.storage.source, t.name).toBe('measured');
      expect(e.storage.unit).toBe('bytes/entity');
      expect(e.storage.measuredAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(e.storage.how).toMatch(/rows of table/);
      if (t.kind === 'categorical') {
        // stored as text (the id's digits): its UTF-8 length, where the planted figure counts an int32 id
        expect(e.storage.how).toMatch(/categorical text/);
        expect(e.storage.value!, t.name).toBeGreaterThanOrEqual(1);
        expect(e.storage.value!, t.name).toBeLessThanOrEqual(t.costs.storageBytesPerEntity);
      } else {
        // the planted storage is the same encoding: a float32 a number, 4 + 4 × mean length a list
        expect(e.storage.value!, t.name).toBeCloseTo(t.costs.storageBytesPerEntity, 1);
      }
    }
    const of = (kind: string) => truth.features.filter((t) => t.kind === kind).map((t) => got.get(t.name)!.storage.value!);
    expect(Math.min(...of('multi_id'))).toBeGreaterThan(Math.max(...of('numeric'), ...of('categorical')));
  });

  it('fans item features out to the candidates per request, user and context features once', () => {
    const got = byName(measured.features);
    for (const t of truth.features) {
      const e = got.get(t.name)!;
      expect(e.entity, t.name).toBe(t.table);
      const n = t.table === 'item' ? 50 : 1;
      expect(e.communication.source).toBe('measured');
      expect(e.communication.measured!.fanOut, t.name).toBe(n);
      expect(e.communication.value!, t.name).toBeCloseTo(e.storage.value! * n, 6);
    }
  });

  it('measures each feature’s compute share on the serving backend: a cost model fitted to timed subsets, its interval and the resolution', () => {
    expect(measured.measurement.backend).toBe('cpu');
    for (const e of measured.features) {
      expect(e.compute.source, e.name).toBe('measured');
      expect(e.compute.unit).toBe('share of one prediction');
      const m = e.compute.measured!;
      expect(m.spread).toBeGreaterThanOrEqual(0);
      expect(e.compute.how).toMatch(/32 models of random halves of the \d+ inputs timed beside the full model .* in 9 rounds/);
      const [low, high] = m.interval!;
      expect(low, e.name).toBeLessThanOrEqual(m.median!);
      expect(high, e.name).toBeGreaterThanOrEqual(m.median!);
      expect(m.resolution!).toBeGreaterThanOrEqual(0);
      // below resolution: the fitted share under the resolution or the interval reaching 0, and counted as 0
      expect(m.belowResolution, e.name).toBe(m.median! <= m.resolution! || low <= 0);
      expect(e.compute.value!, e.name).toBe(m.belowResolution ? 0 : Math.min(1, m.median!));
      expect(e.compute.how).toMatch(m.belowResolution ? /below resolution/ : /share .*interval .*resolution/);
    }
    // the ranking the world's structure implies: a multi-id list (several lookups a row) costs at least
    // a single id (more where the fit resolves the lookups; on a busy machine it may fold them into the
    // slot's cost), which costs more than one numeric column (kind means of the fitted shares)
    const got = byName(measured.features);
    const mean = (kind: string) => {
      const xs = truth.features.filter((t) => t.kind === kind).map((t) => got.get(t.name)!.compute.measured!.median!);
      return xs.reduce((s, x) => s + x, 0) / xs.length;
    };
    expect(mean('multi_id')).toBeGreaterThanOrEqual(mean('categorical') - 1e-9);
    expect(mean('categorical')).toBeGreaterThanOrEqual(mean('numeric') - 1e-9);
    // strictly more, unless the fit told no feature from another (every share the same: a machine too
    // busy for the timings to resolve anything, seen once in CI)
    const shares = new Set(measured.features.map((e) => e.compute.measured!.median!));
    if (shares.size > 1) expect(mean('categorical')).toBeGreaterThan(mean('numeric'));
  });

  it('takes the fan-out from the model: its architecture, else the query', async () => {
    const features = ['i_price', 'u_age', 'u_recent_cats'];
    await ok(
      call('POST', '/models', {
        name: 'small',
        businessLine: 'feed',
        sampleSetId,
        features,
        architecture: { candidatesPerRequest: 10 },
      }),
      201,
    );
    const l = await ok(call('GET', '/features/costs?model=small'));
    expect(l.candidatesPerRequest).toBe(10);
    const got = byName(l.features);
    expect([...got.keys()].sort()).toEqual([...features].sort());
    expect(got.get('i_price')!.communication.value).toBeCloseTo(got.get('i_price')!.storage.value! * 10, 6);
    expect(got.get('u_age')!.communication.value).toBeCloseTo(got.get('u_age')!.storage.value!, 6);
    const q = await ok(call('GET', '/features/costs?model=small&candidatesPerRequest=7'));
    expect(byName(q.features).get('i_price')!.communication.measured!.fanOut).toBe(7);
    // measuring a model's features times that model's forward
    const m = await ok(call('POST', '/features/costs/measure', { model: 'small', rows: 256, repeats: 1 }));
    expect(m.measurement.measured.sort()).toEqual([...features].sort());
    expect(byName(m.features).get('u_recent_cats')!.compute.how).toMatch(/every one of the 6 proper subsets of the 3 inputs/);
  });

  it('declared figures override measured ones, are marked declared, and both are kept', async () => {
    const before = byName(measured.features).get('i_tags')!;
    await ok(call('PATCH', `/features/${before.id}`, { costs: { storageBytesPerEntity: 99, computeCost: 0.5 } }));
    const e = byName((await ok(call('GET', '/features/costs?businessLine=feed'))).features).get('i_tags')!;
    expect(e.storage).toMatchObject({ value: 99, source: 'declared', declared: 99 });
    expect(e.storage.measuredAt).toMatch(/^\d{4}-/);
    expect(e.storage.measured!.value).toBeCloseTo(before.storage.value!, 6);
    expect(e.compute).toMatchObject({ value: 0.5, source: 'declared' });
    expect(e.compute.measured!.value).toBe(before.compute.value);
    // communication was not declared: still the measured figure
    expect(e.communication.source).toBe('measured');
    // a new measurement keeps the declared figures in force
    await ok(call('POST', '/features/costs/measure', { businessLine: 'feed', features: ['i_tags'], compute: false }));
    const again = byName((await ok(call('GET', '/features/costs?businessLine=feed'))).features).get('i_tags')!;
    expect(again.storage).toMatchObject({ value: 99, source: 'declared' });
  });

  it('lists a feature without any cost as such, and says why it could not be measured', async () => {
    const f = await ok(call('POST', '/features', { name: 'orphan', businessLine: 'feed', kind: 'numeric' }), 201);
    const l = await ok(call('GET', '/features/costs?businessLine=feed'));
    const e = byName(l.features).get('orphan')!;
    expect(e).toMatchObject({ id: f.id, noCost: true, entity: null });
    expect(e.storage.source).toBeNull();
    const m = await ok(call('POST', '/features/costs/measure', { businessLine: 'feed', features: ['orphan'], compute: false }));
    expect(m.measurement.skipped).toEqual([{ name: 'orphan', reason: expect.stringMatching(/no feature table/) }]);
    const bad = await call('POST', '/features/costs/measure', { businessLine: 'feed', features: ['nope'] });
    expect(bad.status).toBe(400);
    const none = await call('POST', '/features/costs/measure', {});
    expect(none.status).toBe(400);
    const unknown = await call('POST', '/features/costs/measure', { businessLine: 'nope' });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toMatch(/unknown business line/);
  });

  it('abacus features costs prints a row per feature (the built CLI)', async () => {
    const run = (args: string[]) => cli(['features', 'costs', ...args], { ...env.env, ABACUS_API_URL: api.url }, 120_000);
    const shown = await run(['--line', 'feed']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^line feed; 100 candidates per request/);
    expect(shown.stdout).toMatch(/i_tags\s+multi_id\s+item\s+99\.00 \(d \d{4}-\d\d-\d\d\)\s+\S+ \(m \d{4}-\d\d-\d\d\)/);
    expect(shown.stdout).toMatch(/orphan\s+numeric\s+\?\s+no cost/);
    const m = await run(['--model', 'small', '--measure', '--candidates', '20', '--json']);
    expect(m.code, m.stderr).toBe(0);
    const body = JSON.parse(m.stdout) as { candidatesPerRequest: number; measurement: { measured: string[] } };
    expect(body.candidatesPerRequest).toBe(20);
    expect(body.measurement.measured.sort()).toEqual(['i_price', 'u_age', 'u_recent_cats']);
    const here = await run(['--model', 'small', '--measure', '--on', 'api']);
    expect(here.code, here.stderr).toBe(0);
    expect(here.stdout).toMatch(/measured 3 feature\(s\) on cpu \(timed in the api on \S+, cpu clock\) in \d+\.\d s/);
    const noMeasure = await run(['--model', 'small', '--on', 'gpu']);
    expect(noMeasure.code).not.toBe(0);
    expect(noMeasure.stderr).toMatch(/--on needs --measure/);
    const badOn = await run(['--model', 'small', '--measure', '--on', 'moon']);
    expect(badOn.code).not.toBe(0);
    expect(badOn.stderr).toMatch(/on/);
    const bad = await run(['--measure']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--line or --model/);
  });
});

describe('where the forward is timed', () => {
  const body = { model: 'small', rows: 256, repeats: 1 };
  const computedAt = async () =>
    byName((await ok(call('GET', '/features/costs?model=small'))).features).get('i_price')!.compute.measuredAt;

  it('without a worker: auto times in the api; worker and gpu answer 503 naming what is missing, and nothing is written', async () => {
    const auto = await ok(call('POST', '/features/costs/measure', body));
    expect(auto.measurement.where).toMatchObject({ process: 'api', backend: 'cpu', clock: 'cpu', gpu: null, pid: process.pid });
    const before = await computedAt();
    for (const [on, why] of [
      ['worker', /no worker listens for cost measurements/],
      ['gpu', /no worker with a GPU listens/],
    ] as const) {
      const r = await call('POST', '/features/costs/measure', { ...body, on });
      expect(r.status, JSON.stringify(r.body)).toBe(503);
      expect(r.body.message).toMatch(why);
    }
    expect(await computedAt()).toBe(before);
    const bad = await call('POST', '/features/costs/measure', { ...body, on: 'elsewhere' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toMatch(/"on"/);
  });

  it('a worker without a GPU takes on: worker (its backend, its clock); auto still times in the api', async () => {
    let worker: WorkerHandle | undefined;
    try {
      worker = await startWorker(env.config, { logger: false });
      const m = await ok(call('POST', '/features/costs/measure', { ...body, on: 'worker' }));
      expect(m.measurement.where).toMatchObject({ process: 'worker', backend: 'cpu', clock: 'cpu', gpu: null });
      expect(m.measurement.backend).toBe('cpu');
      expect(m.measurement.rows).toBe(256);
      expect(m.measurement.measured.sort()).toEqual(['i_price', 'u_age', 'u_recent_cats']);
      const e = byName(m.features).get('u_recent_cats')!;
      expect(e.compute.measuredAt).toBe(m.measurement.measuredAt);
      expect(e.compute.how).toMatch(/every one of the 6 proper subsets of the 3 inputs/);
      // it does not listen on the GPU queue: auto stays in the api, gpu is refused
      expect((await ok(call('POST', '/features/costs/measure', body))).measurement.where.process).toBe('api');
      expect((await call('POST', '/features/costs/measure', { ...body, on: 'gpu' })).status).toBe(503);
    } finally {
      await worker?.stop(500);
    }
  });

  it('auto hands the timing to a worker on the GPU queue when one listens', async () => {
    // a host listening on the GPU cost queue only (the worker app does so where it sees a GPU); it times
    // on this machine's backend, so the figures are real, only the queue is the GPU one
    const costs = new CostMeasureHandler({ backend: 'cpu', threads: 2 });
    const skip = Object.values(QueueName).filter((q) => q !== QueueName.CostsGpu);
    const host = new WorkerHost(env.config, { [JobName.CostMeasureGpu]: (p) => costs.handle(p) }, skip);
    expect(host.queueNames).toEqual([QueueName.CostsGpu]);
    host.start();
    try {
      let m: any;
      // BullMQ lists the new worker's connection once it is ready
      for (let i = 0; i < 50; i++) {
        m = await ok(call('POST', '/features/costs/measure', body));
        if (m.measurement.where.process === 'worker') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(m.measurement.where).toMatchObject({ process: 'worker', backend: 'cpu' });
      expect(m.measurement.measured.sort()).toEqual(['i_price', 'u_age', 'u_recent_cats']);
    } finally {
      await host.stop(500);
    }
  });

  it('a measurement no worker takes in time is withdrawn: no job is left behind', async () => {
    const queue = new QueueService(env.config);
    try {
      const job = { requestId: 'test', inputs: [{ name: 'x', kind: 'numeric' as const }], repeats: 1 };
      await expect(queue.runCostMeasure(false, job, 1000)).rejects.toThrow(JobTimeoutError);
      await expect(queue.runCostMeasure(false, job, 1000)).rejects.toThrow(/none took it; it was withdrawn/);
      const counts = await queue.queue(QueueName.Costs).getJobCounts('waiting', 'active', 'delayed', 'prioritized');
      expect(
        Object.values(counts).every((n) => n === 0),
        JSON.stringify(counts),
      ).toBe(true);
    } finally {
      await queue.close();
    }
  });
});
