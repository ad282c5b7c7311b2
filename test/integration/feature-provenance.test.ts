import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';
import { createTestEnv, type TestEnv } from '../support/test-env';

// GET /features/:id/experiments: the experiments of the feature's line that name it, with each
// kind's verdict on it, read from results that a real worker produced on a 2,000-row set.
let env: TestEnv;
let api: ApiHandle;
let worker: WorkerHandle;
const http = apiClient(
  () => api.url,
  () => env.adminKey,
);
const call = http.call;
const ids: Record<string, string> = {};
const results: Record<string, Record<string, any>> = {};
const featureIds: Record<string, string> = {};
const training = { epochs: 2, batchSize: 256 };

async function run(kind: string, line: string, spec: Record<string, unknown>) {
  const r = await call('POST', '/experiments', { kind, name: `${kind} for provenance`, businessLine: line, spec });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const e = await http.finished(String(r.body.id), 300_000, `${kind} experiment`);
  expect(e.status, JSON.stringify(e.error)).toBe('succeeded');
  return e;
}

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  worker = await startWorker(env.config, { logger: false });
  const csv = path.join(env.dataDir, 'small.csv');
  writeSmallCsv(csv);
  for (const line of ['feed', 'search']) {
    expect((await call('POST', '/business-lines', { name: line })).status).toBe(201);
    const up = await http.upload('/sample-sets', csv, { name: 'small', businessLine: line, label: 'click', time: 'ts' });
    expect(up.status, JSON.stringify(up.body)).toBe(201);
  }
  // the set's columns as registered features (declared costs, which divide needs)
  for (const [name, kind, cost] of [
    ['strong', 'numeric', 1],
    ['weak', 'numeric', 4],
    ['noise', 'numeric', 8],
    ['color', 'categorical', 2],
  ] as const) {
    const r = await call('POST', '/features', {
      name,
      businessLine: 'feed',
      kind,
      costs: { storageBytesPerEntity: cost * 4, fetchBytesPerRequest: cost * 4, computeCost: cost / 10 },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    featureIds[name] = String(r.body.id);
  }
  const score = await run('score', 'feed', { sampleSet: 'small' });
  const subtract = await run('subtract', 'feed', {
    model: { sampleSet: 'small', training },
    retrainSeeds: 0,
    confirm: false,
    folds: 4,
    repeats: 1,
  });
  const add = await run('add', 'feed', {
    base: { sampleSet: 'small', features: ['strong', 'color'], training },
    candidates: ['weak', 'noise'],
    folds: 4,
    seeds: 3,
  });
  const divide = await run('divide', 'feed', {
    model: { sampleSet: 'small', training },
    tiers: [1, 0.4],
    seeds: 1,
    folds: 4,
    repeats: 1,
    interactionTop: 0,
    publishAs: 'small-tiers',
  });
  // the same set in another line: its experiment names "strong" too, but is not feed's provenance
  const other = await run('score', 'search', { sampleSet: 'small' });
  for (const [k, e] of Object.entries({ score, subtract, add, divide, other })) {
    ids[k] = String(e.id);
    results[k] = e.result as Record<string, any>;
  }
}, 900_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await env?.teardown();
});

describe('GET /features/:id/experiments', () => {
  it("lists every experiment of the feature's line that measured it, newest first, with each kind's verdict", async () => {
    const r = await call('GET', `/features/${featureIds.strong}/experiments`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.feature).toEqual({ id: featureIds.strong, name: 'strong', businessLine: 'feed' });
    const items = r.body.items as Record<string, any>[];
    // newest first; the search line's experiment is not listed
    expect(items.map((i) => i.kind)).toEqual(['divide', 'add', 'subtract', 'score']);
    expect(items.map((i) => i.id)).not.toContain(ids.other);
    expect(r.body.total).toBe(4);

    const byKind = Object.fromEntries(items.map((i) => [i.kind, i]));
    const ranking = (results.score.ranking as Record<string, any>[]).find((x) => x.feature === 'strong')!;
    expect(byKind.score.verdict).toBe(ranking.strength);
    expect(byKind.score.values.iv).toBeCloseTo(ranking.iv, 12);
    // strong drives the click: the most informative of the four
    expect(byKind.score.values.rank).toBe(1);
    expect(['strong', 'suspicious']).toContain(byKind.score.verdict);

    const row = (results.subtract.perFeature as Record<string, any>[]).find((x) => x.feature === 'strong')!;
    expect(byKind.subtract.verdict).toBe((results.subtract.removable as string[]).includes('strong') ? 'removable' : 'kept');
    expect(byKind.subtract.verdict).toBe('kept');
    expect(byKind.subtract.values.shuffleDrop).toBeCloseTo(row.shuffleDrop, 12);
    expect(byKind.subtract.detail).toMatch(/^kept: AUC drop when shuffled 0\.\d{4}/);

    // strong is in add's base model, not a candidate
    expect(byKind.add.verdict).toBe('base feature');

    const kept = (results.divide.frontier as Record<string, any>[])
      .filter((t) => (t.milp.selected as string[]).includes('strong'))
      .map((t) => t.alias);
    expect(kept).toContain('tier-0');
    expect(byKind.divide.values.tiers).toEqual(kept);
    expect(byKind.divide.verdict).toBe(kept.length > 1 ? 'in tiers' : 'in no tier');
  });

  it("gives an add candidate its verdict and gain from the experiment's result", async () => {
    for (const name of ['weak', 'noise']) {
      const r = await call('GET', `/features/${featureIds[name]}/experiments`);
      expect(r.status).toBe(200);
      const add = (r.body.items as Record<string, any>[]).find((i) => i.kind === 'add')!;
      const c = (results.add.candidates as Record<string, any>[]).find((x) => x.feature === name)!;
      expect(add.verdict).toBe(c.verdict);
      expect(['adopt', 'reject', 'inconclusive']).toContain(add.verdict);
      expect(add.values.gain).toBeCloseTo(c.leaveOneIn?.delta ?? c.contribution.mean, 12);
      expect(add.detail).toContain(`${c.verdict as string}: AUC gain`);
    }
    // noise carries no signal: never adopted
    const noise = (await call('GET', `/features/${featureIds.noise}/experiments`)).body.items as Record<string, any>[];
    expect(noise.find((i) => i.kind === 'add')!.verdict).not.toBe('adopt');
  });

  it('pages, and refuses a bad query or an unknown feature', async () => {
    const p2 = await call('GET', `/features/${featureIds.strong}/experiments?page=2&pageSize=3`);
    expect(p2.status).toBe(200);
    expect(p2.body.items.map((i: { kind: string }) => i.kind)).toEqual(['score']);
    expect(p2.body.total).toBe(4);
    const bad = await call('GET', `/features/${featureIds.strong}/experiments?pageSize=0`);
    expect(bad.status).toBe(400);
    expect(bad.body.issues?.[0]?.path).toBe('pageSize');
    const unknown = await call('GET', `/features/00000000-0000-4000-8000-000000000000/experiments`);
    expect(unknown.status).toBe(404);
  });

  it("is line-scoped: a key without the feature's line gets a 404, a viewer of it the list", async () => {
    const other = await call('POST', '/keys', { name: 'search-only', role: 'viewer', lines: ['search'] });
    const viewer = await call('POST', '/keys', { name: 'feed-viewer', role: 'viewer', lines: ['feed'] });
    const as = (secret: string) =>
      apiClient(
        () => api.url,
        () => secret,
      ).call;
    const hidden = await as(String(other.body.secret))('GET', `/features/${featureIds.strong}/experiments`);
    expect(hidden.status).toBe(404);
    const seen = await as(String(viewer.body.secret))('GET', `/features/${featureIds.strong}/experiments`);
    expect(seen.status).toBe(200);
    expect(seen.body.total).toBe(4);
  });
});

describe('GET /features filters', () => {
  it('finds features by part of the name, owner and role (candidate or in a registered model)', async () => {
    const names = async (q: string) =>
      ((await call('GET', `/features?businessLine=feed&${q}`)).body.items as { name: string }[]).map((f) => f.name);
    expect(await names('name=ON')).toEqual(['strong']);
    expect(await names('name=o')).toEqual(['color', 'noise', 'strong']);
    // % and _ are matched as themselves
    expect(await names('name=%25')).toEqual([]);
    expect(await names('owner=test-admin')).toEqual(['color', 'noise', 'strong', 'weak']);
    expect(await names('owner=someone-else')).toEqual([]);
    // divide published tier models; tier-0 has all four features
    expect(await names('role=in-model')).toEqual(['color', 'noise', 'strong', 'weak']);
    expect(await names('role=candidate')).toEqual([]);
    const reg = await call('POST', '/features', { name: 'fresh', businessLine: 'feed', kind: 'numeric' });
    expect(reg.status).toBe(201);
    expect(await names('role=candidate')).toEqual(['fresh']);
    expect(await names('role=candidate&kind=categorical')).toEqual([]);
    const bad = await call('GET', '/features?role=maybe');
    expect(bad.status).toBe(400);
    expect(bad.body.issues?.[0]?.path).toBe('role');
  });
});
