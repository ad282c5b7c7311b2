import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource, ModelEntity } from '@abacus/data';
import { JobName, QueueName, QueueService, WorkerHost, type JobHandlers } from '@abacus/queue';
import { ActiveTierCache, DeliverySweeper, ServingWebhookHandler } from '@abacus/serving';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { createTestEnv, waitUntil, type TestEnv } from '../support/test-env';
import { writeSmallCsv } from '../support/fixtures';
import { cli } from '../support/processes';
import { apiClient } from '../support/http';
import { startReceiver, type ReceivedHook } from '../support/webhook-receiver';
import { ServingClient, type ServedModel } from '../../examples/serving-client/client';

/**
 * Serving switch hooks end to end: tier rows of a model (as divide publishes them), a served model
 * with a policy, a scripted signal sequence through the API, the switch log, signed webhooks to a
 * loopback receiver delivered by a worker through BullMQ (also after the receiver was down), pins,
 * and the active tier answered from the Redis-backed cache.
 */

const SECRET = 'serving-test-secret-0123456789';
let env: TestEnv;
let api: ApiHandle;
let ds: DataSource;
let host: WorkerHost;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const received: ReceivedHook[] = [];
const tierIds: Record<number, string> = {};
const admin = apiClient(
  () => api.url,
  () => env.adminKey,
);

const policy = {
  signals: { cpu: { stepDownAbove: 0.8, stepUpBelow: 0.5 }, p99LatencyMs: { stepDownAbove: 250 } },
  cooldownSeconds: 10,
  minDwellSeconds: 20,
};
const register = (over: Record<string, unknown> = {}) =>
  admin.call('POST', '/serving', {
    model: 'ctr',
    businessLine: 'feed',
    tiers: [0, 1, 2],
    webhookUrl: receiver.url,
    secret: SECRET,
    policy,
    ...over,
  });

beforeAll(async () => {
  env = await createTestEnv({
    ABACUS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    ABACUS_SERVING_WEBHOOK_ATTEMPTS: '8',
    ABACUS_SERVING_WEBHOOK_BACKOFF_MS: '150',
    // the schedule pass, often enough to be seen switching
    ABACUS_SERVING_SCHEDULE_INTERVAL_MS: '300',
  });
  receiver = await startReceiver({ received });
  api = await startApi(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
  expect((await admin.call('POST', '/business-lines', { name: 'feed' })).status).toBe(201);
  const file = path.join(env.dataDir, 'in', 'serving.csv');
  writeSmallCsv(file, 100);
  const ss = await admin.upload('/sample-sets', file, { name: 'serving', businessLine: 'feed', label: 'click', time: 'ts' });
  expect(ss.status).toBe(201);
  // three versions of "ctr", made tiers 0..2 the way divide publishes them (fewer features per tier)
  const features = [['strong', 'weak', 'noise', 'color'], ['strong', 'weak', 'color'], ['strong']];
  for (let t = 0; t < 3; t++) {
    const m = await admin.call('POST', '/models', {
      name: 'ctr',
      businessLine: 'feed',
      sampleSetId: ss.body.id,
      features: features[t],
    });
    expect(m.status).toBe(201);
    await ds.getRepository(ModelEntity).update({ id: m.body.id }, { tier: t });
    tierIds[t] = m.body.id;
  }
  const handler = new ServingWebhookHandler(ds, env.config.ABACUS_WEBHOOK_ALLOWED_HOSTS);
  const unused = async () => {
    throw new Error('not used in this test');
  };
  const handlers: Partial<JobHandlers> = {
    [JobName.FinalizeExperiment]: unused,
    [JobName.ScoreTrial]: unused,
    [JobName.TrainTrial]: unused,
    [JobName.AblateTrial]: unused,
    [JobName.PruneTrial]: unused,
    [JobName.CompareTrial]: unused,
    [JobName.DiscoverTrial]: unused,
    [JobName.MultiplyTrial]: unused,
    [JobName.MultiplyCompareTrial]: unused,
    [JobName.DivideSelectTrial]: unused,
    [JobName.DivideTierTrial]: unused,
    [JobName.DividePublishTrial]: unused,
    [JobName.ServingWebhook]: (p, ctx) => handler.handle(p, ctx),
    [JobName.ReportFire]: unused,
    [JobName.ReportRun]: unused,
    [JobName.ReportDeliver]: unused,
  };
  // webhooks only: no workers on the cost-measurement and fit-check queues
  host = new WorkerHost(env.config, handlers, [QueueName.Costs, QueueName.CostsGpu, QueueName.Fits, QueueName.FitsGpu]);
  host.start();
});

afterAll(async () => {
  await host?.stop(500);
  await ds?.destroy();
  await api?.close();
  await receiver?.close();
  await env?.teardown();
});

const verify = (h: ReceivedHook) => {
  const sig = createHmac('sha256', SECRET)
    .update(`${String(h.headers['x-abacus-timestamp'])}.${h.body}`)
    .digest('hex');
  return h.headers['x-abacus-signature'] === `sha256=${sig}`;
};
const hooksOf = (servingId: string) =>
  received
    .map((h) => ({
      h,
      body: JSON.parse(h.body) as { payload: { servingId: string; from: number; to: number; manual: boolean } },
    }))
    .filter((x) => x.body.payload.servingId === servingId);

describe('serving switch hooks', () => {
  it('a scripted signal sequence switches tiers as the policy says, logs each switch and sends signed webhooks', async () => {
    const reg = await register();
    expect(reg.status, JSON.stringify(reg.body)).toBe(201);
    expect(JSON.stringify(reg.body)).not.toContain(SECRET);
    const id = reg.body.id as string;
    const base = Date.now();
    const at = (s: number) => new Date(base + s * 1000).toISOString();
    const script: [number, Record<string, number>, number][] = [
      [30, { cpu: 0.9 }, 1], // above: step down
      [35, { cpu: 0.95 }, 1], // cooldown
      [60, { cpu: 0.7, p99LatencyMs: 100 }, 1], // inside the band
      [62, { cpu: 0.55 }, 1], // inside the band
      [70, { cpu: 0.3, p99LatencyMs: 400 }, 2], // latency above: step down
      [100, { cpu: 0.99 }, 2], // lowest tier
      [110, { cpu: 0.2 }, 1], // every stepUpBelow met: step up
      [120, { cpu: 0.2 }, 1], // dwell
      [135, { cpu: 0.2 }, 0],
      [200, { cpu: 0.1 }, 0], // never above tier 0
    ];
    for (const [s, sig, tier] of script) {
      const r = await admin.call('POST', `/serving/${id}/signals`, { at: at(s), ...sig });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(`${s}: ${r.body.tier}`, r.body.decision?.reason).toBe(`${s}: ${tier}`);
    }
    const log = await admin.call('GET', `/serving/${id}/log`);
    const rows = log.body as unknown as {
      fromTier: number;
      toTier: number;
      manual: boolean;
      actor: string;
      signals: unknown;
      reason: string;
      at: string;
    }[];
    expect(rows.map((r) => `${r.fromTier}->${r.toTier}`)).toEqual(['0->1', '1->2', '2->1', '1->0']);
    expect(rows.every((r) => !r.manual && r.actor === 'policy')).toBe(true);
    expect(rows[1].signals).toEqual({ cpu: 0.3, p99LatencyMs: 400 });
    expect(rows[1].reason).toMatch(/p99LatencyMs 400 > 250/);
    expect(rows[0].at).toBe(at(30));

    const hooks = await waitUntil(async () => (hooksOf(id).length >= 4 ? hooksOf(id) : null), 20_000, 'four webhooks');
    expect(hooks.map((x) => `${x.body.payload.from}->${x.body.payload.to}`).sort()).toEqual(['0->1', '1->0', '1->2', '2->1']);
    for (const x of hooks) {
      expect(verify(x.h)).toBe(true);
      expect(x.h.headers['x-abacus-event']).toBe('serving.switch');
    }
    const stored = await waitUntil(
      async () => {
        const l = (await admin.call('GET', `/serving/${id}/log`)).body as unknown as {
          deliveries: { status: string; attempts: number; statusCodes: number[] }[];
        }[];
        return l.every((r) => r.deliveries[0]?.status === 'delivered') ? l : null;
      },
      10_000,
      'deliveries stored as delivered',
    );
    expect(stored[0].deliveries[0]).toMatchObject({ attempts: 1, statusCodes: [204] });

    const active = await admin.call('GET', `/serving/${id}/active`);
    expect(active.body).toMatchObject({
      tier: 0,
      modelId: tierIds[0],
      version: 1,
      features: ['strong', 'weak', 'noise', 'color'],
      artifacts: {
        safetensors: `/api/v1/models/${tierIds[0]}/export?format=safetensors`,
        onnx: `/api/v1/models/${tierIds[0]}/export?format=onnx`,
      },
      since: at(135),
      pinned: null,
    });
  });

  it('a pin overrides the policy until it is removed; the active tier reaches other processes through Redis', async () => {
    const id = (await register()).body.id as string;
    // another API process: its cache must answer from Redis, never from Postgres
    const other = new ActiveTierCache(env.config.ABACUS_REDIS_URL, env.config.ABACUS_QUEUE_PREFIX, async () => {
      throw new Error('the hot path must not reach Postgres');
    });
    try {
      expect((await other.get(id))?.tier).toBe(0);
      const pin = await admin.call('POST', `/serving/${id}/pin`, { tier: 2, reason: 'load test' });
      expect(pin.status, JSON.stringify(pin.body)).toBe(200);
      const active = (await admin.call('GET', `/serving/${id}/active`)).body;
      expect(active).toMatchObject({ tier: 2, modelId: tierIds[2], pinned: { tier: 2, reason: 'load test', by: 'test-admin' } });
      await waitUntil(async () => (await other.get(id))?.tier === 2, 5000, 'the other process to see tier 2');
      // cool signals would step up, but the pin holds
      const r = await admin.call('POST', `/serving/${id}/signals`, {
        at: new Date(Date.now() + 600_000).toISOString(),
        cpu: 0.1,
      });
      expect(r.body).toMatchObject({ tier: 2, decision: { action: 'hold', reason: 'pinned to tier-2' } });
      expect((await admin.call('DELETE', `/serving/${id}/pin`)).status).toBe(200);
      expect((await admin.call('GET', `/serving/${id}/active`)).body.pinned).toBeNull();
      await waitUntil(async () => (await other.get(id))?.pinned === null, 5000, 'the other process to see the unpin');
      const again = await admin.call('POST', `/serving/${id}/signals`, {
        at: new Date(Date.now() + 700_000).toISOString(),
        cpu: 0.1,
      });
      expect(again.body.tier).toBe(1);
      const log = (await admin.call('GET', `/serving/${id}/log`)).body as unknown as {
        manual: boolean;
        actor: string;
        reason: string;
        toTier: number;
      }[];
      expect(log.map((l) => [l.toTier, l.manual, l.actor])).toEqual([
        [2, true, 'test-admin'],
        [1, false, 'policy'],
      ]);
      expect(log[0].reason).toBe('pinned: load test');
      // a process publishing an older state late does not overwrite a newer one
      const latest = (await other.get(id))!;
      await other.put({ ...latest, tier: 2, rev: latest.rev - 1 });
      const fresh = new ActiveTierCache(env.config.ABACUS_REDIS_URL, env.config.ABACUS_QUEUE_PREFIX, async () => null);
      try {
        expect(await fresh.get(id)).toMatchObject({ tier: 1, rev: latest.rev });
      } finally {
        await fresh.close();
      }
    } finally {
      await other.close();
    }
  });

  it('a webhook survives the receiver being down: retried with backoff, delivered, the outcome stored', async () => {
    const id = (await register()).body.id as string;
    await receiver.close();
    const port = receiver.port;
    expect((await admin.call('POST', `/serving/${id}/pin`, { tier: 1, reason: 'receiver down' })).status).toBe(200);
    type D = { status: string; attempts: number; statusCodes: number[]; lastError: string | null };
    const delivery = async () =>
      ((await admin.call('GET', `/serving/${id}/log`)).body as unknown as { deliveries: D[] }[])[0]?.deliveries[0];
    const failing = await waitUntil(
      async () => {
        const d = await delivery();
        return d && d.attempts >= 2 ? d : null;
      },
      10_000,
      'two failed attempts',
    );
    expect(failing.status).toBe('pending');
    expect(failing.lastError).toMatch(/ECONNREFUSED/);
    receiver = await startReceiver({ port, received });
    const done = await waitUntil(
      async () => {
        const d = await delivery();
        return d?.status === 'delivered' ? d : null;
      },
      20_000,
      'the delivery after the receiver came back',
    );
    expect(done.attempts).toBeGreaterThanOrEqual(3);
    expect(done.statusCodes.slice(0, 2)).toEqual([0, 0]);
    expect(done.statusCodes.at(-1)).toBe(204);
    expect(done.lastError).toBeNull();
    const hook = hooksOf(id).find((x) => x.body.payload.to === 1 && x.body.payload.manual);
    expect(hook && verify(hook.h)).toBe(true);
  });

  it('a delivery left pending without a job (the API could not enqueue it) is swept up and delivered', async () => {
    const id = (await register()).body.id as string;
    await admin.call('POST', `/serving/${id}/pin`, { tier: 1, reason: 'sweep' });
    const [sw] = (await admin.call('GET', `/serving/${id}/log`)).body as unknown as { id: string }[];
    const [row] = (await ds.query(
      `INSERT INTO serving_webhook_deliveries (serving_id, switch_id, event, url, payload, updated_at)
       VALUES ($1, $2, 'serving.switch', $3, '{"servingId":"${id}","from":0,"to":1,"manual":true}', now() - interval '5 minutes')
       RETURNING id`,
      [id, sw.id, receiver.url],
    )) as { id: string }[];
    const queue = new QueueService(env.config);
    try {
      expect(await new DeliverySweeper(ds, queue, 60_000).sweepOnce()).toEqual([row.id]);
    } finally {
      await queue.close();
    }
    await waitUntil(
      async () =>
        ((await ds.query(`SELECT status FROM serving_webhook_deliveries WHERE id = $1`, [row.id])) as { status: string }[])[0]
          .status === 'delivered',
      10_000,
      'the swept delivery',
    );
    expect(received.some((h) => h.headers['x-abacus-delivery'] === row.id && verify(h))).toBe(true);
  });

  it('bad input is a 400 naming the field; unknown tiers are 404s naming the tier', async () => {
    const overlap = await register({ policy: { signals: { cpu: { stepDownAbove: 0.6, stepUpBelow: 0.7 } } } });
    expect(overlap.status).toBe(400);
    expect(overlap.body.issues!.map((i) => i.path)).toContain('policy.signals.cpu.stepUpBelow');
    const ftp = await register({ webhookUrl: 'ftp://hooks.example.com/x' });
    expect(ftp.status).toBe(400);
    expect(ftp.body.issues!.map((i) => i.path)).toEqual(['webhookUrl']);
    const privateHost = await register({ webhookUrl: 'http://10.1.2.3/x' });
    expect(privateHost.status).toBe(400);
    expect(privateHost.body.issues!.map((i) => i.path)).toEqual(['webhookUrl']);
    const missingTier = await register({ tiers: [0, 7] });
    expect(missingTier.status).toBe(404);
    expect(missingTier.body.message).toMatch(/tier-7 of model "ctr"/);
    const id = (await register()).body.id as string;
    const pin = await admin.call('POST', `/serving/${id}/pin`, { tier: 9, reason: 'x' });
    expect(pin.status).toBe(404);
    expect(pin.body.message).toMatch(/tier-9/);
    const sig = await admin.call('POST', `/serving/${id}/signals`, { cpu: 1.5, at: 'yesterday' });
    expect(sig.status).toBe(400);
    expect(sig.body.issues!.map((i) => i.path).sort()).toEqual(['at', 'cpu']);
    expect((await admin.call('GET', '/serving/00000000-0000-0000-0000-000000000000/active')).status).toBe(404);
  });

  it('the api’s schedule pass switches a served model when a window is open, once, and says so in the log', async () => {
    // a window around now (UTC, minutes): tier 2 preferred, e.g. a cheap tier at a known peak
    const hhmm = (d: Date) => d.toISOString().slice(11, 16);
    const now = Date.now();
    const schedule = {
      timeZone: 'UTC',
      windows: [{ tier: 2, from: hhmm(new Date(now - 60_000)), to: hhmm(new Date(now + 5 * 60_000)) }],
    };
    const r = await admin.call('POST', '/serving', {
      model: 'ctr',
      businessLine: 'feed',
      tiers: [0, 1, 2],
      webhookUrl: receiver.url,
      secret: SECRET,
      policy: { ...policy, cooldownSeconds: 0, minDwellSeconds: 0, schedule },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const id = String(r.body.id);
    expect(r.body.activeTier).toBe(0);
    await waitUntil(
      async () => (await admin.call('GET', `/serving/${id}/active`)).body.tier === 2,
      10_000,
      'the schedule pass to switch',
    );
    const view = (await admin.call('GET', `/serving/${id}`)).body;
    expect(view.scheduleNow).toMatchObject({ index: 0, tier: 2 });
    // the passes after it leave it be: one switch, by the schedule, with its webhook
    await new Promise((res) => setTimeout(res, 1000));
    const log = (await admin.call('GET', `/serving/${id}/log`)).body as unknown as {
      fromTier: number;
      toTier: number;
      actor: string;
      reason: string;
      signals: unknown;
    }[];
    expect(log.map((x) => [x.fromTier, x.toTier, x.actor])).toEqual([[0, 2, 'schedule']]);
    expect(log[0]!.reason).toMatch(/^schedule: window \d\d:\d\d–\d\d:\d\d UTC prefers tier-2$/);
    expect(log[0]!.signals).toBeNull();
    await waitUntil(async () => hooksOf(id).length === 1, 10_000, 'the webhook of the scheduled switch');
    expect(hooksOf(id)[0]!.body.payload).toMatchObject({ from: 0, to: 2, manual: false });
  });

  it('the example client registers, verifies webhooks, reports signals and swaps the model it serves', async () => {
    const client = new ServingClient({ apiUrl: api.url, apiKey: env.adminKey, secret: SECRET });
    const swaps: [number, number | null][] = [];
    client.onSwitch((next: ServedModel, prev: ServedModel | null) => {
      swaps.push([next.tier, prev?.tier ?? null]);
    });
    try {
      await client.register({ model: 'ctr', businessLine: 'feed', tiers: [0, 1, 2], policy });
      expect(client.currentTier()).toBe(0);
      expect(client.currentModel()?.artifactUrls.onnx).toBe(`${api.url}/api/v1/models/${tierIds[0]}/export?format=onnx`);
      const r = await client.reportSignals({ at: new Date(Date.now() + 60_000).toISOString(), cpu: 0.9 });
      expect(r.tier).toBe(1);
      await waitUntil(async () => client.currentTier() === 1, 10_000, 'the client to swap to tier 1 on the webhook');
      expect(client.currentModel()?.features).toEqual(['strong', 'weak', 'color']);
      await admin.call('POST', `/serving/${client.id}/pin`, { tier: 2, reason: 'client test' });
      await waitUntil(async () => client.currentTier() === 2, 10_000, 'the client to swap to tier 2 on the pin');
      expect(swaps).toEqual([
        [0, null],
        [1, 0],
        [2, 1],
      ]);
      // a forged webhook is refused
      const hookUrl = (await admin.call('GET', `/serving/${client.id}`)).body.webhookUrl as string;
      const forged = await fetch(hookUrl, {
        method: 'POST',
        headers: { 'x-abacus-timestamp': String(Math.floor(Date.now() / 1000)), 'x-abacus-signature': 'sha256=00' },
        body: '{}',
      });
      expect(forged.status).toBe(401);
      expect(client.rejected).toBe(1);
    } finally {
      await client.close();
    }
  });

  it('the CLI registers, signals, pins and shows the active tier and the log; bad flags are named', async () => {
    const run = (args: string[]) => cli(args, { ...env.env, ABACUS_API_URL: api.url }, 60_000);
    const secretFile = path.join(env.dataDir, 'hook-secret');
    fs.writeFileSync(secretFile, `${SECRET}\n`);
    const policyFile = path.join(env.dataDir, 'policy.json');
    fs.writeFileSync(policyFile, JSON.stringify(policy));
    const reg = await run([
      'serving',
      'register',
      '--model',
      'ctr',
      '--line',
      'feed',
      '--tiers',
      '0,1,2',
      '--webhook-url',
      receiver.url,
      '--secret-file',
      secretFile,
      '--policy',
      policyFile,
      '--json',
    ]);
    expect(reg.code, reg.stderr).toBe(0);
    const id = (JSON.parse(reg.stdout) as { id: string }).id;
    const at = new Date(Date.now() + 60_000).toISOString();
    const sig = await run(['serving', 'signal', id, '--at', at, '--cpu', '0.95']);
    expect(sig.code, sig.stderr).toBe(0);
    expect(sig.stdout).toMatch(/switch: tier-1 \(step down: cpu 0.95 > 0.8\)/);
    const pin = await run(['serving', 'pin', id, '--tier', '2', '--reason', 'from the cli']);
    expect(pin.code, pin.stderr).toBe(0);
    const active = await run(['serving', 'active', id]);
    expect(active.stdout).toMatch(/tier-2 since .*pinned by test-admin: from the cli/);
    expect(active.stdout).toContain(`/api/v1/models/${tierIds[2]}/export?format=safetensors`);
    expect((await run(['serving', 'unpin', id])).code).toBe(0);
    const log = await run(['serving', 'log', id]);
    expect(log.stdout).toMatch(/tier-0 -> tier-1.*policy/);
    expect(log.stdout).toMatch(/tier-1 -> tier-2.*manual \(test-admin\)/);
    const bad = await run(['serving', 'signal', id, '--cpu', '2']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--cpu/);
    const badTiers = await run([
      'serving',
      'register',
      '--model',
      'ctr',
      '--line',
      'feed',
      '--tiers',
      'a,b',
      '--webhook-url',
      receiver.url,
      '--secret-file',
      secretFile,
    ]);
    expect(badTiers.code).toBe(1);
    expect(badTiers.stderr).toMatch(/--tiers/);
  });
});
