import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-web';
import { simulateWorld, writeWorld } from '@abacus/samples';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { ServingClient, type ServedModel } from '../../examples/serving-client/client';
import { ServingService } from '@abacus/serving';
import { createTestEnv, waitUntil, type TestEnv } from '../support/test-env';
import { apiClient } from '../support/http';

let env: TestEnv;
let api: ApiHandle;
let worker: WorkerHandle;
let client: ServingClient;
let nightClient: ServingClient;
const http = apiClient(
  () => api.url,
  () => env.adminKey,
);
const BATCH = 64;

/** inputs for any exported tier: every input the graph declares, from one fixed random stream */
function inputsFor(session: ort.InferenceSession): Record<string, ort.Tensor> {
  let s = 12345;
  const rnd = () => (s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const feeds: Record<string, ort.Tensor> = {};
  for (const m of session.inputMetadata) {
    const shape = (m as { shape: readonly (number | string)[] }).shape;
    if (m.name === 'numeric') {
      const n = Number(shape[1]);
      feeds.numeric = new ort.Tensor(
        'float32',
        Float32Array.from({ length: BATCH * n }, () => rnd() * 4 - 2),
        [BATCH, n],
      );
    } else {
      feeds[m.name] = new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: BATCH }, () => BigInt(Math.floor(rnd() * 3))),
        [BATCH, 1],
      );
    }
  }
  return feeds;
}

async function predictWith(url: string): Promise<Float32Array> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${env.adminKey}` } });
  expect(res.status).toBe(200);
  const session = await ort.InferenceSession.create(new Uint8Array(await res.arrayBuffer()));
  const out = await session.run(inputsFor(session));
  return out.probability.data as Float32Array;
}

beforeAll(async () => {
  // the schedule pass runs when the test says, at the time it names
  env = await createTestEnv({ ABACUS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', ABACUS_SERVING_SCHEDULE_INTERVAL_MS: '0' });
  api = await startApi(env.config, { logger: false });
  worker = await startWorker(env.config, { logger: false });
  const dir = path.join(env.dataDir, 'world');
  const world = simulateWorld({ seed: 4, rows: 40_000 });
  await writeWorld(world, dir);
  const features = world.groundTruth.features.filter((f) => f.inConfigOf.includes('feed'));
  await http.call('POST', '/business-lines', { name: 'feed' });
  const up = await http.upload('/sample-sets', path.join(dir, 'samples', 'feed.parquet'), {
    name: 'feed-samples',
    businessLine: 'feed',
    label: 'click',
    time: 'ts',
    keys: 'impression_id,user_id,item_id,context_id,domain',
  });
  expect(up.status).toBe(201);
  // the feed model's features, and the world's features of other lines' models (the large tier's pool)
  for (const f of world.groundTruth.features) {
    await http.call('POST', '/features', {
      name: f.name,
      businessLine: 'feed',
      kind: f.kind,
      costs: { ...f.costs, source: 'declared' },
    });
  }
  // three tiers of the feed model: a large one above it (its features and the pool, at most 1.5 × its
  // cost), the full one, and one at 40% of its cost
  const r = await http.call('POST', '/experiments', {
    kind: 'divide',
    businessLine: 'feed',
    spec: {
      model: { sampleSet: 'feed-samples', features: features.map((f) => f.name), training: { epochs: 2, batchSize: 512 } },
      tiers: [1, 0.4],
      large: { budget: 1.5 },
      seeds: 1,
      folds: 3,
      repeats: 1,
      interactionTop: 0,
      publishAs: 'ctr',
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const e = await http.finished(String(r.body.id), 600_000, 'divide experiment');
  expect(e.status, e.error).toBe('succeeded');
}, 900_000);

afterAll(async () => {
  await client?.close();
  await nightClient?.close();
  await worker?.stop();
  await api?.close();
  await env?.teardown();
});

describe('a serving system following the tiers (examples/serving-client)', () => {
  it('swaps to the tier the policy picks, and its predictions become the new tier’s', async () => {
    client = new ServingClient({ apiUrl: api.url, apiKey: env.adminKey, secret: 'e2e-secret-0123456789' });
    const served: { model: ServedModel; predictions: Float32Array }[] = [];
    // a serving process: on every swap, load the tier's ONNX artifact and predict a fixed batch
    client.onSwitch(async (next) => {
      served.push({ model: next, predictions: await predictWith(next.artifactUrls.onnx) });
    });
    await client.register({
      model: 'ctr',
      businessLine: 'feed',
      tiers: [0, 1],
      policy: { signals: { cpu: { stepDownAbove: 0.8, stepUpBelow: 0.5 } }, cooldownSeconds: 0, minDwellSeconds: 0 },
    });
    expect(client.currentTier()).toBe(0);
    expect(served).toHaveLength(1);
    const tiers = (await http.call('GET', '/models?businessLine=feed&pageSize=50')).body.items as {
      id: string;
      tier: number;
      features: string[];
    }[];
    const tier1 = tiers.find((m) => m.tier === 1)!;
    expect(tier1.features.length).toBeLessThan(tiers.find((m) => m.tier === 0)!.features.length);

    // overload: the policy steps down; the webhook makes the client swap
    const d = await client.reportSignals({ cpu: 0.95 });
    expect(d.tier).toBe(1);
    await waitUntil(async () => client.currentTier() === 1 && served.length === 2, 30_000, 'the client to swap to tier 1');
    expect(served[1].model.modelId).toBe(tier1.id);
    const p0 = served[0].predictions;
    const p1 = served[1].predictions;
    // the served predictions are now tier 1's: those of its exported graph, not tier 0's
    expect([...p1]).toEqual([...(await predictWith(`${api.url}/api/v1/models/${tier1.id}/export?format=onnx`))]);
    expect(p1.some((x, i) => Math.abs(x - p0[i]) > 1e-4)).toBe(true);

    // load back to normal: it steps back up to the full model
    await client.reportSignals({ cpu: 0.2 });
    await waitUntil(async () => client.currentTier() === 0 && served.length === 3, 30_000, 'the client to swap back to tier 0');
    expect([...served[2].predictions]).toEqual([...p0]);
    // the switch log: both switches, automatic, with their signals, each webhook delivered
    const log = (await http.call('GET', `/serving/${client.id}/log`)).body as {
      fromTier: number;
      toTier: number;
      reason: string;
      manual: boolean;
      deliveries: { status: string }[];
    }[];
    const switches = log.map((x) => [x.fromTier, x.toTier, x.manual, x.deliveries.map((d) => d.status).join()]);
    expect(switches).toEqual(
      expect.arrayContaining([
        [0, 1, false, 'delivered'],
        [1, 0, false, 'delivered'],
      ]),
    );
  });
});

describe('a schedule: the large tier off-peak', () => {
  it('the client follows the large tier into its window and out of it; each time its predictions are that tier’s ONNX', async () => {
    nightClient = new ServingClient({ apiUrl: api.url, apiKey: env.adminKey, secret: 'e2e-night-secret-0123' });
    const served: { model: ServedModel; predictions: Float32Array }[] = [];
    nightClient.onSwitch(async (next) => {
      served.push({ model: next, predictions: await predictWith(next.artifactUrls.onnx) });
    });
    await nightClient.register({
      model: 'ctr',
      businessLine: 'feed',
      tiers: [-1, 0, 1],
      policy: {
        signals: { cpu: { stepDownAbove: 0.8, stepUpBelow: 0.5 } },
        cooldownSeconds: 0,
        minDwellSeconds: 0,
        schedule: { timeZone: 'UTC', windows: [{ tier: -1, from: '22:00', to: '06:00' }] },
      },
    });
    // served from the full model; the large tier waits for its window
    expect(nightClient.currentTier()).toBe(0);
    const models = (await http.call('GET', '/models?businessLine=feed&pageSize=50')).body.items as {
      id: string;
      name: string;
      tier: number;
    }[];
    const large = models.find((m) => m.name === 'ctr' && m.tier === -1)!;
    expect(large).toBeDefined();
    const service = api.app.get(ServingService);
    const day = new Date();
    day.setUTCHours(0, 0, 0, 0);
    const tomorrow = (hh: number) => new Date(day.getTime() + (24 + hh) * 3_600_000);

    // 01:00 UTC tomorrow: inside the window — the pass switches to the large tier, the webhook makes the client swap
    expect(await service.scheduleOnce(tomorrow(1))).toEqual([
      expect.objectContaining({
        servingId: nightClient.id,
        from: 0,
        to: -1,
        reason: 'schedule: window 22:00–06:00 UTC prefers tier-large',
      }),
    ]);
    await waitUntil(
      async () => nightClient.currentTier() === -1 && served.length === 2,
      30_000,
      'the client to swap to the large tier',
    );
    expect(served[1].model.modelId).toBe(large.id);
    expect([...served[1].predictions]).toEqual([
      ...(await predictWith(`${api.url}/api/v1/models/${large.id}/export?format=onnx`)),
    ]);
    expect(served[1].predictions.some((x, i) => Math.abs(x - served[0].predictions[i]) > 1e-4)).toBe(true);
    // the same pass again: nothing to do
    expect(await service.scheduleOnce(tomorrow(2))).toEqual([]);

    // 07:00 UTC: the window has closed — back to the full model
    expect(await service.scheduleOnce(tomorrow(7))).toEqual([expect.objectContaining({ from: -1, to: 0 })]);
    await waitUntil(
      async () => nightClient.currentTier() === 0 && served.length === 3,
      30_000,
      'the client to swap back to tier 0',
    );
    expect([...served[2].predictions]).toEqual([...served[0].predictions]);

    const log = (await http.call('GET', `/serving/${nightClient.id}/log`)).body as {
      fromTier: number;
      toTier: number;
      reason: string;
      actor: string;
      manual: boolean;
      deliveries: { status: string }[];
    }[];
    expect(log.map((x) => [x.fromTier, x.toTier, x.actor, x.manual, x.deliveries.map((d) => d.status).join()])).toEqual(
      expect.arrayContaining([
        [0, -1, 'schedule', false, 'delivered'],
        [-1, 0, 'schedule', false, 'delivered'],
      ]),
    );
    expect(log.find((x) => x.toTier === 0)!.reason).toMatch(/^schedule: outside every window/);
  });

  it('400 naming the field for a bad schedule, and nothing registered', async () => {
    const before = ((await http.call('GET', '/serving?businessLine=feed')).body as unknown as unknown[]).length;
    const register = (schedule: unknown, tiers = [-1, 0, 1]) =>
      http.call('POST', '/serving', {
        model: 'ctr',
        businessLine: 'feed',
        tiers,
        webhookUrl: 'http://127.0.0.1:9/hook',
        secret: 'a-secret-of-16-chars',
        policy: { schedule },
      });
    const paths = (r: { body: { issues?: { path: string }[] } }) => (r.body.issues ?? []).map((i) => i.path);
    const zone = await register({ timeZone: 'Nowhere/Atlantis', windows: [{ tier: -1, from: '22:00', to: '06:00' }] });
    expect(zone.status).toBe(400);
    expect(paths(zone)).toEqual(['policy.schedule.timeZone']);
    const overlap = await register({
      timeZone: 'UTC',
      windows: [
        { tier: -1, from: '22:00', to: '06:00' },
        { tier: 1, from: '05:00', to: '09:00' },
      ],
    });
    expect(overlap.status).toBe(400);
    expect(paths(overlap)).toEqual(['policy.schedule.windows.1']);
    const missing = await register({ timeZone: 'UTC', windows: [{ tier: -1, from: '22:00', to: '06:00' }] }, [0, 1]);
    expect(missing.status).toBe(400);
    expect(paths(missing)).toEqual(['policy.schedule.windows.0.tier']);
    expect(((await http.call('GET', '/serving?businessLine=feed')).body as unknown as unknown[]).length).toBe(before);
  });
});
