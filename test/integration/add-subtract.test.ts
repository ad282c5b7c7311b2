import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource, FeatureEntity } from '@abacus/data';
import { simulateWorld, writeWorld, type GroundTruth } from '@abacus/samples';
import { WebhookNotifier } from '@abacus/workflows';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { startReceiver } from '../support/webhook-receiver';
import { apiClient } from '../support/http';

const SECRET = 'test-secret-0123456789';
let env: TestEnv;
let api: ApiHandle;
let worker: WorkerHandle;
let ds: DataSource;
let truth: GroundTruth;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

const http = apiClient(
  () => api.url,
  () => env.adminKey,
);
const call = http.call;
async function upload(route: string, file: string, fields: Record<string, string>) {
  const r = await http.upload(route, file, fields);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

async function run(body: unknown): Promise<Record<string, any>> {
  const r = await call('POST', '/experiments', body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return http.finished(String(r.body.id), 600_000, `${(body as { kind: string }).kind} experiment`);
}

const role = (r: string) => truth.features.filter((f) => f.role === r).map((f) => f.name);
const configOf = (line: string) => truth.features.filter((f) => f.inConfigOf.includes(line)).map((f) => f.name);

beforeAll(async () => {
  receiver = await startReceiver();
  // the receiver listens on loopback, which webhooks may only reach when allowed explicitly
  env = await createTestEnv({
    ABACUS_NOTIFY_WEBHOOK_URL: receiver.url,
    ABACUS_NOTIFY_WEBHOOK_SECRET: SECRET,
    ABACUS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  });
  api = await startApi(env.config, { logger: false });
  worker = await startWorker(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
  const dir = path.join(env.dataDir, 'world');
  const world = simulateWorld({ seed: 5, rows: 400_000 });
  await writeWorld(world, dir);
  truth = world.groundTruth;
  for (const line of ['feed', 'search']) {
    await call('POST', '/business-lines', { name: line });
    await upload('/sample-sets', path.join(dir, 'samples', `${line}.parquet`), {
      name: `${line}-samples`,
      businessLine: line,
      label: 'click',
      time: 'ts',
      keys: 'impression_id,user_id,item_id,context_id,domain',
    });
  }
  // the registry (for costs and provenance): the world's feature tables under feed
  for (const [table, key, time] of [
    ['users', 'user_id', 'ts'],
    ['items', 'item_id', ''],
    ['contexts', 'context_id', ''],
  ]) {
    await upload('/feature-tables', path.join(dir, `${table}.parquet`), {
      name: table,
      businessLine: 'feed',
      entityKey: key,
      ...(time ? { time } : {}),
    });
  }
  for (const f of await ds.getRepository(FeatureEntity).find()) {
    const t = truth.features.find((x) => x.name === f.name);
    if (t) await call('PATCH', `/features/${f.id}`, { costs: t.costs });
  }
}, 600_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await ds?.destroy();
  await receiver?.close();
  await env?.teardown();
});

describe('subtract on the simulator ground truth', () => {
  it('removes the noise, keeps the strong features, and the confirmed model stays within the limit', async () => {
    // the feed line's model: the features in its config
    const features = configOf('feed');
    const e = await run({
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { sampleSet: 'feed-samples', features }, maxDrop: 0.001, seed: 3 },
    });
    expect(e.status, e.error ?? '').toBe('succeeded');
    const r = e.result;
    const removable = new Set<string>(r.removable);
    const noise = role('noise').filter((f) => features.includes(f));
    const strong = role('strong').filter((f) => features.includes(f));
    const noiseRemoved = noise.filter((f) => removable.has(f));
    expect(noiseRemoved.length / noise.length, `noise removed: ${noiseRemoved}`).toBeGreaterThanOrEqual(0.9);
    expect(
      strong.filter((f) => removable.has(f)),
      'strong features removed',
    ).toEqual([]);
    expect(removable.size / features.length, `removed ${[...removable]}`).toBeGreaterThanOrEqual(0.4);
    expect(r.confirmed.withinLimit, JSON.stringify(r.confirmed)).toBe(true);
    expect(r.full.auc - r.confirmed.auc).toBeLessThanOrEqual(0.001);
    // redundant copies: of a strong feature and its noisy copy at most one stays, unless both are
    // needed within the limit (a check that removed the copy alone was rejected)
    for (const copy of truth.features.filter((f) => f.role === 'redundant' && features.includes(f.name))) {
      const kept = [copy.name, copy.copyOf!].filter((f) => !removable.has(f));
      const needed = r.curve.some(
        (c: { added: string[]; accepted: boolean; check: string }) =>
          c.check === 'retrain' && !c.accepted && c.added.length === 1 && c.added[0] === copy.name,
      );
      expect(kept.length <= 1 || needed, `${copy.name} / ${copy.copyOf} both kept`).toBe(true);
    }
    expect(r.curve.length).toBeGreaterThan(0);
    // decisions on the validation split, the confirmation on the test split
    expect(r.splits).toEqual({ decisions: 'validation', reported: 'test' });
    expect(r.estimatedDrop.split).toBe('validation');
    expect(r.confirmed.split).toBe('test');
    // the confirm step: 3 to 5 fresh seeds; it stops before the fifth only when the validation split
    // decided the paired drop against maxDrop (the rule's interval clear of it), else it fits them all
    const stop = r.confirmed.stoppedWhenDecided;
    expect(r.confirmed.seedsPlanned).toEqual([1001, 1002, 1003, 1004, 1005]);
    expect(r.confirmed.seeds).toEqual(r.confirmed.seedsPlanned.slice(0, r.confirmed.seeds.length));
    expect(r.confirmed.seeds.length).toBeGreaterThanOrEqual(3);
    expect(stop).toMatchObject({ split: 'validation', minSeeds: 3, maxDrop: 0.001, seeds: r.confirmed.seeds.length });
    expect(stop.ciLow).toBeLessThanOrEqual(stop.drop);
    expect(stop.ciHigh).toBeGreaterThanOrEqual(stop.drop);
    expect(stop.decided).toBe(stop.ciHigh <= 0.001 || stop.ciLow > 0.001);
    if (r.confirmed.seeds.length < 5) expect(stop.decided).toBe(true);
    expect(r.resourcesSaved.storageBytesPerEntity).toBeGreaterThan(0);
    expect(e.trials.map((t: { kind: string }) => t.kind)).toEqual(['train', 'ablate', 'score', 'prune', 'train']);
    // five seeds per retraining check and the scan past the first rejected batch: 136 s to 255 s on two shared cores
  }, 600_000);
});

describe('subtract with warm retraining checks', () => {
  it('fine-tunes copies of the trained model instead of retraining, and still keeps the strong features and drops the noise', async () => {
    const features = configOf('feed');
    // the feed line's ~77k fitted rows are 75 steps an epoch: auto would retrain from scratch, so warm is
    // asked for, with 3 epochs (225 steps) to give the fine-tune room
    const e = await run({
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { sampleSet: 'feed-samples', features }, maxDrop: 0.001, seed: 3, retrain: 'warm', warmEpochs: 3 },
    });
    expect(e.status, e.error ?? '').toBe('succeeded');
    const r = e.result;
    const removable = new Set<string>(r.removable);
    const noise = role('noise').filter((f) => features.includes(f));
    const strong = role('strong').filter((f) => features.includes(f));
    expect(strong.filter((f) => removable.has(f)), 'strong features removed').toEqual([]);
    const noiseRemoved = noise.filter((f) => removable.has(f));
    expect(noiseRemoved.length / noise.length, `noise removed: ${noiseRemoved}`).toBeGreaterThanOrEqual(0.75);
    expect(r.confirmed.withinLimit, JSON.stringify(r.confirmed)).toBe(true);
    const prune = e.trials.find((t: { kind: string }) => t.kind === 'prune');
    // warm checks ran: three seeds, no model trained from scratch, no samples built for a subset
    expect(prune.metrics.retrainMode).toMatchObject({ mode: 'warm', asked: 'warm', warmEpochs: 3, seeds: [1, 2, 3] });
    expect(r.retrainCheck.mode).toBe('warm');
    expect(prune.metrics.timings.retrainFits).toBeGreaterThan(0);
    expect(prune.metrics.timings.warmTrainMs).toBeGreaterThan(0);
    expect(prune.metrics.timings.retrainBuildMs).toBe(0);
    expect(r.curve.some((c: { check: string }) => c.check === 'retrain')).toBe(true);
  }, 600_000);
});

describe('add on the simulator ground truth', () => {
  const base = () => configOf('feed').filter((f) => !role('noise').includes(f));
  const candidates = ['u_member_level', 'i_hist_ctr', 'u_noise_num', 'c_noise_num'];
  let first: Record<string, any>;

  it('adopts the planted useful candidates, rejects the noise ones, records provenance and notifies the owner', async () => {
    receiver.received.length = 0;
    first = await run({
      kind: 'add',
      businessLine: 'feed',
      spec: { base: { sampleSet: 'feed-samples', features: base() }, candidates, seed: 4 },
    });
    expect(first.status, first.error ?? '').toBe('succeeded');
    const v = Object.fromEntries(
      first.result.candidates.map((c: { feature: string; verdict: string }) => [c.feature, c.verdict]),
    );
    expect(v).toEqual({ u_member_level: 'adopt', i_hist_ctr: 'adopt', u_noise_num: 'reject', c_noise_num: 'reject' });
    for (const c of first.result.candidates.filter((x: { feature: string }) => x.feature.includes('noise'))) {
      expect(c.contribution.ciLow).toBeLessThanOrEqual(0);
      expect(c.contribution.ciHigh).toBeGreaterThanOrEqual(0);
    }
    expect(first.result.delta.auc.ciLow).toBeGreaterThan(0);
    expect(first.result.delta.split).toBe('test');
    for (const c of first.result.candidates) {
      expect(c.gain.split).toBe('test');
      expect(c.screen.split).toBe('validation');
      // an adopt rests on base + candidate retrained on every seed, paired with the base model's seeds
      if (c.verdict === 'adopt') {
        expect(c.leaveOneIn).toMatchObject({ split: 'validation', seeds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], df: 9 });
        // cross-fitted: seed k judged on its own tenth of the training range, together the whole of it
        expect(c.leaveOneIn.foldRows).toHaveLength(10);
        expect(c.leaveOneIn.ciLow).toBeGreaterThan(0);
        expect(c.leaveOneIn.mean).toBeGreaterThanOrEqual(first.result.minGain);
      }
    }
    const f = await ds.getRepository(FeatureEntity).findOneByOrFail({ businessLine: 'feed', name: 'u_member_level' });
    expect(f.provenance).toEqual([expect.objectContaining({ businessLine: 'feed', experimentId: first.id, metric: 'auc' })]);
    expect(f.provenance[0].gain).toBeGreaterThan(0);
    expect(receiver.received).toHaveLength(1);
    const hook = receiver.received[0];
    const sig = WebhookNotifier.sign(SECRET, String(hook.headers['x-abacus-timestamp']), hook.body);
    expect(hook.headers['x-abacus-signature']).toBe(sig);
    expect(hook.headers['x-abacus-delivery']).toBe(first.id);
    expect(JSON.parse(hook.body).payload.adopted.sort()).toEqual(['i_hist_ctr', 'u_member_level']);
  });

  it('gives the same verdicts when rerun with the same seed (reusing the cached trainings)', async () => {
    const again = await run({
      kind: 'add',
      businessLine: 'feed',
      spec: { base: { sampleSet: 'feed-samples', features: base() }, candidates, seed: 4 },
    });
    expect(again.result.candidates.map((c: { verdict: string }) => c.verdict)).toEqual(
      first.result.candidates.map((c: { verdict: string }) => c.verdict),
    );
    expect(
      again.trials
        .filter((t: { kind: string }) => t.kind === 'train')
        .every((t: { metrics: { modelCached: boolean } }) => t.metrics.modelCached),
    ).toBe(true);
  });

  it('resolves a candidate that is not a column from the registry: joined from its feature table, point in time', async () => {
    // the same samples without u_member_level: the candidate must come from the users table (by user_id, as of ts)
    const lite = path.join(env.dataDir, 'feed-lite.parquet');
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    await conn.run(
      `COPY (SELECT * EXCLUDE (u_member_level) FROM read_parquet('${path.join(env.dataDir, 'world', 'samples', 'feed.parquet')}')) TO '${lite}' (FORMAT parquet)`,
    );
    conn.closeSync();
    db.closeSync();
    await upload('/sample-sets', lite, {
      name: 'feed-lite',
      businessLine: 'feed',
      label: 'click',
      time: 'ts',
      keys: 'impression_id,user_id,item_id,context_id,domain',
    });
    const e = await run({
      kind: 'add',
      businessLine: 'feed',
      spec: { base: { sampleSet: 'feed-lite', features: base() }, candidates: ['u_member_level'], seed: 4 },
    });
    expect(e.status, e.error ?? '').toBe('succeeded');
    const aug = e.trials.find((t: { metrics: { role: string } }) => t.metrics.role === 'augmented');
    const cand = aug.params.recipe.features.find((f: { name: string }) => f.name === 'u_member_level');
    expect(cand.source).toMatchObject({
      kind: 'table',
      entityKey: 'user_id',
      sampleKey: 'user_id',
      timeColumn: 'ts',
      column: 'u_member_level',
    });
    expect(e.result.candidates[0]).toMatchObject({ feature: 'u_member_level', verdict: 'adopt' });
    // the joined feature carries the same signal as the column it replaces (same samples, same seed)
    expect(Math.abs(e.result.candidates[0].contribution.mean - first.result.candidates[0].contribution.mean)).toBeLessThan(0.005);
  });

  it('auto finds features measured positive in another line', async () => {
    const searchBase = configOf('search').filter((f) => !role('noise').includes(f));
    const e = await run({
      kind: 'add',
      businessLine: 'search',
      spec: { base: { sampleSet: 'search-samples', features: searchBase }, candidates: 'auto', seed: 4 },
    });
    expect(e.status, e.error ?? '').toBe('succeeded');
    expect(e.spec.resolved.candidates).toEqual(['u_member_level']);
  });
});
