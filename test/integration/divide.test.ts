import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simulateWorld, writeWorld, type GroundTruth } from '@abacus/samples';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { renderExperiment, type Experiment } from '../../apps/cli/src/commands/experiment.command';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { apiClient } from '../support/http';

let env: TestEnv;
let api: ApiHandle;
let worker: WorkerHandle;
let truth: GroundTruth;
let features: string[];

const http = apiClient(
  () => api.url,
  () => env.adminKey,
);
const call = http.call;
const TRAINING = { epochs: 3, batchSize: 512 };
const experimentCount = async () => (await call('GET', '/experiments?pageSize=500')).body.total as number;

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  worker = await startWorker(env.config, { logger: false });
  const dir = path.join(env.dataDir, 'world');
  const world = simulateWorld({ seed: 3, rows: 120_000 });
  await writeWorld(world, dir);
  truth = world.groundTruth;
  features = truth.features.filter((f) => f.inConfigOf.includes('feed')).map((f) => f.name);
  await call('POST', '/business-lines', { name: 'feed' });
  const r = await http.upload('/sample-sets', path.join(dir, 'samples', 'feed.parquet'), {
    name: 'feed-samples',
    businessLine: 'feed',
    label: 'click',
    time: 'ts',
    keys: 'impression_id,user_id,item_id,context_id,domain',
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  // the planted costs, declared in the registry (every feature but the last: the 400 test needs one without)
  for (const f of truth.features.filter((x) => features.includes(x.name)).slice(0, -1)) {
    const c = await call('POST', '/features', {
      name: f.name,
      businessLine: 'feed',
      kind: f.kind,
      costs: { ...f.costs, source: 'declared' },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
  }
}, 600_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await env?.teardown();
});

describe('divide: refused before anything is queued', () => {
  it('400 naming the field for budgets outside (0, 1], tiers that do not decrease, and a feature without costs', async () => {
    const before = await experimentCount();
    const submit = (spec: Record<string, unknown>) =>
      call('POST', '/experiments', {
        kind: 'divide',
        businessLine: 'feed',
        spec: { model: { sampleSet: 'feed-samples', features: features.slice(0, -1) }, ...spec },
      });
    const zero = await submit({ tiers: [1, 0.5, 0] });
    expect(zero.status).toBe(400);
    expect(zero.body.issues!.map((i: { path: string }) => i.path)).toContain('spec.tiers.2');
    const over = await submit({ tiers: [1.5] });
    expect(over.body.issues!.map((i: { path: string }) => i.path)).toContain('spec.tiers.0');
    const up = await submit({ tiers: [1, 0.5, 0.7] });
    expect(up.status).toBe(400);
    expect(up.body.issues).toContainEqual(
      expect.objectContaining({ path: 'spec.tiers.2', message: expect.stringContaining('decrease') }),
    );
    const perResource = await submit({
      tiers: [1, { storage: 0.5 }, { storage: 0.5, compute: 0.8 }, { storage: 0.6, compute: 0.5 }],
    });
    expect(perResource.body.issues!.map((i: { path: string }) => i.path)).toEqual(['spec.tiers.3']);
    const uncosted = await call('POST', '/experiments', {
      kind: 'divide',
      businessLine: 'feed',
      spec: { model: { sampleSet: 'feed-samples', features } },
    });
    expect(uncosted.status).toBe(400);
    expect(JSON.stringify(uncosted.body)).toContain(`spec.model.features.${features.length - 1}`);
    expect(JSON.stringify(uncosted.body)).toContain('has no cost');
    expect(await experimentCount()).toBe(before);
  });
});

describe('divide on the simulator: the feed model under storage / communication / compute budgets', () => {
  let e: Record<string, any>;

  it('retrains every tier, keeps ≥ 99% of the AUC lift at half the cost, and the MILP is at least as good as greedy', async () => {
    const r = await call('POST', '/experiments', {
      kind: 'divide',
      businessLine: 'feed',
      spec: {
        model: { sampleSet: 'feed-samples', features: features.slice(0, -1), training: TRAINING },
        tiers: [1, 0.7, 0.5, 0.3],
        seeds: 2,
        folds: 5,
        repeats: 2,
        interactionTop: 4,
        publishAs: 'feed-tiers',
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    e = await http.finished(String(r.body.id), 900_000, 'divide experiment');
    expect(e.status, e.error ?? JSON.stringify(e.trials?.map((t: { error: string }) => t.error))).toBe('succeeded');
    console.log(renderExperiment(e as Experiment));
    const f = e.result.frontier as {
      tier: number;
      budget: Record<string, number>;
      solver: { status: string; gap: number };
      milp: { auc: number; costFractions: Record<string, number>; liftKept: number; seedSpread: number; selected: string[] };
      greedy: { auc: number; costFractions: Record<string, number>; seedSpread: number };
    }[];
    expect(f.map((x) => x.tier)).toEqual([0, 1, 2, 3]);
    for (const x of f) {
      // within budget in every resource
      for (const res of ['storage', 'communication', 'compute']) {
        expect(x.milp.costFractions[res]).toBeLessThanOrEqual(x.budget[res] + 1e-9);
        expect(x.greedy.costFractions[res]).toBeLessThanOrEqual(x.budget[res] + 1e-9);
      }
      if (x.tier > 0) {
        expect(x.solver.status).toBe('Optimal');
        expect(x.solver.gap).toBeLessThanOrEqual(1e-6);
        // the MILP's retrained AUC is at least the greedy baseline's, or within the seeds' spread
        expect(x.milp.auc).toBeGreaterThanOrEqual(x.greedy.auc - Math.max(x.milp.seedSpread, x.greedy.seedSpread));
      }
    }
    const half = f.find((x) => x.budget.storage === 0.5)!;
    expect(half.milp.liftKept).toBeGreaterThanOrEqual(0.99);
  });

  it('publishes the tiers as versions of the model with their features, checkpoint, costs and metrics', async () => {
    const models = (await call('GET', '/models?businessLine=feed&pageSize=50')).body.items as {
      name: string;
      version: number;
      tier: number;
      features: string[];
      checkpointPath: string | null;
      costs: { fractions: Record<string, number> };
      metrics: { auc: number };
      experimentId: string;
    }[];
    const tiers = models.filter((m) => m.name === 'feed-tiers').sort((a, b) => a.tier - b.tier);
    expect(tiers.map((m) => m.tier)).toEqual([0, 1, 2, 3]);
    for (const m of tiers) {
      const point = e.result.frontier[m.tier].milp;
      expect(m.experimentId).toBe(e.id);
      expect(m.features).toEqual(point.selected);
      expect(m.metrics.auc).toBeCloseTo(point.auc, 12);
      expect(m.costs.fractions).toEqual(point.costFractions);
      expect(m.checkpointPath).toMatch(/^models\//);
    }
    expect(tiers[0].features).toEqual(features.slice(0, -1));
    // every tier can be served without our runtime: its checkpoint exports as ONNX
    for (const m of tiers) {
      const res = await fetch(`${api.url}/api/v1/models/${(m as unknown as { id: string }).id}/export?format=onnx`, {
        headers: { authorization: `Bearer ${env.adminKey}` },
      });
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }
    expect(e.result.published.map((p: { tier: number }) => p.tier)).toEqual([0, 1, 2, 3]);
    // a tier is addressable by its alias in any later model spec
    const sub = await call('POST', '/experiments', {
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { model: 'feed-tiers@tier-2' } },
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    expect(sub.body.spec.resolved.features).toEqual(tiers[2].features);
    await call('POST', `/experiments/${sub.body.id}/cancel`);
    const missing = await call('POST', '/experiments', {
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { model: 'feed-tiers@tier-7' } },
    });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toContain('no model \\"feed-tiers@tier-7\\" in feed');
  });
});

describe('divide with the values of a finished subtract', () => {
  it('takes the subtract’s shuffle scores instead of ablating again, and refuses anything but a succeeded subtract', async () => {
    const model = { sampleSet: 'feed-samples', features: features.slice(0, -1), training: TRAINING };
    const s = await call('POST', '/experiments', {
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model, scorers: ['shuffle'], folds: 4, repeats: 1, retrainSeeds: 0, confirm: false },
    });
    expect(s.status, JSON.stringify(s.body)).toBe(201);
    const sub = await http.finished(String(s.body.id), 600_000, 'subtract');
    expect(sub.status, sub.error).toBe('succeeded');
    const notSubtract = await call('POST', '/experiments', {
      kind: 'divide',
      businessLine: 'feed',
      spec: { model, value: { subtract: (await call('GET', '/experiments?kind=divide')).body.items[0].id } },
    });
    expect(notSubtract.status).toBe(400);
    expect(JSON.stringify(notSubtract.body)).toContain('spec.value.subtract');
    const r = await call('POST', '/experiments', {
      kind: 'divide',
      businessLine: 'feed',
      spec: { model, value: { subtract: sub.id }, tiers: [1, 0.5], seeds: 1, interactionTop: 0, publishAs: 'feed-from-subtract' },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const e = await http.finished(String(r.body.id), 600_000, 'divide');
    expect(e.status, e.error).toBe('succeeded');
    // no ablation of its own: the selection read the subtract's shuffle values
    expect(e.trials.map((t: { kind: string }) => t.kind)).toEqual(['train', 'select', 'tier', 'tier', 'publish']);
    const select = e.trials.find((t: { kind: string }) => t.kind === 'select');
    const shuffle = (await call('GET', `/experiments/${sub.id}/results?scorer=shuffle_auc`)).body as unknown as {
      featureName: string;
      value: number;
    }[];
    expect(shuffle.length).toBe(features.length - 1);
    for (const x of shuffle) expect(select.metrics.values[x.featureName].mean).toBeCloseTo(x.value, 12);
    expect(e.result.frontier.map((f: { tier: number }) => f.tier)).toEqual([0, 1]);
  });
});

describe('divide with a large tier: a budget above the model and a pool of features it does not use', () => {
  // the world's strong features of other lines' configurations: columns of the feed samples the feed model leaves out
  const poolTruth = () => truth.features.filter((f) => !f.inConfigOf.includes('feed'));
  let e: Record<string, any>;

  beforeAll(async () => {
    for (const f of poolTruth()) {
      const c = await call('POST', '/features', {
        name: f.name,
        businessLine: 'feed',
        kind: f.kind,
        costs: { ...f.costs, source: 'declared' },
      });
      expect(c.status, JSON.stringify(c.body)).toBe(201);
    }
  });

  it('400 naming the field for a budget not above the model, a pool feature the model has, and one that cannot join; nothing queued', async () => {
    const before = await experimentCount();
    const model = { sampleSet: 'feed-samples', features: features.slice(0, -1) };
    const submit = (large: unknown) =>
      call('POST', '/experiments', { kind: 'divide', businessLine: 'feed', spec: { model, large } });
    const one = await submit({ budget: 1 });
    expect(one.status).toBe(400);
    expect(one.body.issues!.map((i: { path: string }) => i.path)).toContain('spec.large.budget');
    const own = await submit({ pool: [features[0]] });
    expect(own.status).toBe(400);
    expect(JSON.stringify(own.body)).toContain('spec.large.pool.0');
    expect(JSON.stringify(own.body)).toContain('a feature of the model already');
    const unknown = await submit({ pool: [poolTruth()[0]!.name, 'no_such_feature'] });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain('spec.large.pool.1');
    expect(await experimentCount()).toBe(before);
  });

  it('selects the large tier by the same MILP on a wide model, retrains it, and it beats the full model on the test split', async () => {
    const r = await call('POST', '/experiments', {
      kind: 'divide',
      businessLine: 'feed',
      spec: {
        model: { sampleSet: 'feed-samples', features: features.slice(0, -1), training: TRAINING },
        tiers: [1, 0.5],
        large: { budget: 1.5 },
        seeds: 2,
        folds: 5,
        repeats: 2,
        interactionTop: 0,
        publishAs: 'feed-large',
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    // the pool: the line's registered features the model leaves out, each with its cost
    expect([...r.body.spec.resolved.large.pool].sort()).toEqual(
      poolTruth()
        .map((f) => f.name)
        .sort(),
    );
    e = await http.finished(String(r.body.id), 900_000, 'divide experiment with a large tier');
    expect(e.status, e.error ?? JSON.stringify(e.trials?.map((t: { error: string }) => t.error))).toBe('succeeded');
    console.log(renderExperiment(e as Experiment));
    expect(e.trials.map((t: { kind: string }) => t.kind)).toEqual([
      'train',
      'ablate',
      'train',
      'ablate',
      'select',
      'tier',
      'tier',
      'tier',
      'publish',
    ]);
    const f = e.result.frontier as {
      tier: number;
      alias: string;
      budget: Record<string, number>;
      milp: { auc: number; costFractions: Record<string, number>; seedSpread: number; selected: string[] };
    }[];
    expect(f.map((x) => [x.tier, x.alias])).toEqual([
      [-1, 'tier-large'],
      [0, 'tier-0'],
      [1, 'tier-1'],
    ]);
    const large = f[0]!;
    for (const res of ['storage', 'communication', 'compute']) {
      expect(large.budget[res]).toBeCloseTo(1.5, 12);
      expect(large.milp.costFractions[res]).toBeLessThanOrEqual(1.5 + 1e-9);
    }
    // the planted strong features of the pool are selected, and the retrained large tier is above the full model
    for (const p of poolTruth().filter((t) => t.role === 'strong')) expect(large.milp.selected).toContain(p.name);
    expect(e.result.large.added.sort()).toEqual(large.milp.selected.filter((x) => !features.includes(x)).sort());
    expect(large.milp.auc).toBeGreaterThan(f[1]!.milp.auc + Math.max(large.milp.seedSpread, f[1]!.milp.seedSpread));
    expect(e.result.large.verdict).toBe('above the full model');
    // published as tier -1, addressable as feed-large@tier-large
    const models = (await call('GET', '/models?businessLine=feed&pageSize=100')).body.items as {
      name: string;
      tier: number;
      features: string[];
    }[];
    const mine = models.filter((m) => m.name === 'feed-large').sort((a, b) => a.tier - b.tier);
    expect(mine.map((m) => m.tier)).toEqual([-1, 0, 1]);
    expect(mine[0]!.features).toEqual(large.milp.selected);
    const sub = await call('POST', '/experiments', {
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { model: 'feed-large@tier-large' } },
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    expect(sub.body.spec.resolved.features).toEqual(large.milp.selected);
    await call('POST', `/experiments/${sub.body.id}/cancel`);
  });
});
