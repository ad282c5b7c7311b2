import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSafetensors } from '@abacus/runtime';
import { simulateWorld, writeWorld, type SlotIdSpace } from '@abacus/samples';
import { multiplyVerdict } from '@abacus/workflows';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { renderEmbedding, type EmbeddingEntry } from '../../apps/cli/src/commands/embeddings.command';
import { renderExperiment, type Experiment } from '../../apps/cli/src/commands/experiment.command';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { apiClient } from '../support/http';

let env: TestEnv;
let api: ApiHandle;
let worker: WorkerHandle;

const http = apiClient(
  () => api.url,
  () => env.adminKey,
);
const call = http.call;
const KEYS = 'impression_id,user_id,item_id,context_id,domain';
const TRAINING = { epochs: 3, batchSize: 512 };
const SEEDS = [1, 2];
let features: string[];
const sets: Record<string, { id: string; dataVersion: string }> = {};

async function upload(file: string, fields: Record<string, string>) {
  const r = await http.upload('/sample-sets', file, fields);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  sets[fields.name] = r.body as { id: string; dataVersion: string };
}

async function run(body: unknown): Promise<Record<string, any>> {
  const r = await call('POST', '/experiments', body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const e = await http.finished(String(r.body.id), 600_000, 'experiment');
  expect(e.status, e.error ?? JSON.stringify(e.trials?.map((t: { error: string }) => t.error))).toBe('succeeded');
  return e;
}

const experimentCount = async () => (await call('GET', '/experiments?pageSize=500')).body.total as number;

/** a model checkpoint's per-slot embedding tables */
async function checkpointTables(modelDir: string) {
  return (await readSafetensors(path.join(env.dataDir, modelDir, 'model.safetensors'))).tensors;
}

/** what the ids of a trained model's slots stand for: the id spaces of the samples it was built from */
function modelIdSpaces(modelDir: string): Record<string, SlotIdSpace> {
  const meta = JSON.parse(fs.readFileSync(path.join(env.dataDir, modelDir, 'meta.json'), 'utf8')) as { samples: string };
  return JSON.parse(fs.readFileSync(path.join(env.dataDir, 'built', meta.samples, 'id-spaces.json'), 'utf8'));
}

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  worker = await startWorker(env.config, { logger: false });
  const dir = path.join(env.dataDir, 'world');
  const world = simulateWorld({ seed: 5, rows: 100_000 });
  await writeWorld(world, dir);
  features = world.groundTruth.features.filter((f) => f.inConfigOf.includes('mall')).map((f) => f.name);
  for (const line of ['feed', 'mall', 'search']) await call('POST', '/business-lines', { name: line });
  const common = { label: 'click', time: 'ts', keys: KEYS };
  await upload(path.join(dir, 'samples', 'mall.parquet'), { ...common, name: 'mall-samples', businessLine: 'mall' });
  await upload(path.join(dir, 'samples', 'feed.parquet'), {
    ...common,
    name: 'feed-samples',
    businessLine: 'feed',
    shareWith: 'mall',
  });
  await upload(path.join(dir, 'samples', 'search.parquet'), { ...common, name: 'search-samples', businessLine: 'search' });
}, 600_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await env?.teardown();
});

let first: Record<string, any>;
let ref: string;

describe('multiply: the shared-embedding strategy', () => {
  it('learns the embedding on the union model, registers name@version, and starts every seed’s target model from it', async () => {
    first = await run({
      kind: 'multiply',
      businessLine: 'mall',
      spec: {
        target: { sampleSet: 'mall-samples', features, training: TRAINING },
        sources: ['feed/feed-samples'],
        strategies: ['union', 'shared_embedding'],
        seeds: SEEDS,
        bootstrap: 100,
      },
    });
    console.log(renderExperiment(first as Experiment));
    const r = first.result;
    const union = r.results.find((x: { strategy: string }) => x.strategy === 'union');
    const shared = r.results.find((x: { strategy: string }) => x.strategy === 'shared_embedding');
    ref = shared.embedding.ref;
    expect(ref).toBe('mall.feed.feed-samples@1');
    expect(r.embeddings).toEqual([
      {
        ref,
        id: shared.embedding.id,
        sources: ['feed/feed-samples'],
        deltaAuc: shared.deltaAuc.delta,
        validationDelta: shared.validation.delta,
        verdict: shared.verdict,
      },
    ]);
    // learned on the union strategy's own seed-1 model (the same training, reused)
    const unionTrial = first.trials.find((t: { metrics: { strategy?: string } }) => t.metrics?.strategy === 'union');
    expect(shared.embedding.learnedOn.model).toBe(unionTrial.metrics.perSeed[0].modelDir);
    // every seed's target model started from it: each categorical slot carried rows
    expect(shared.embedding.initialised.map((i: { seed: number }) => i.seed)).toEqual(SEEDS);
    for (const i of shared.embedding.initialised) {
      expect(i.init.embedding).toBe(ref);
      expect(i.init.slots.length).toBe(shared.embedding.slots.length);
      for (const s of i.init.slots) {
        expect(s.skipped).toBeUndefined();
        expect(s.copied).toBeGreaterThan(1);
        expect(s.copied).toBeLessThanOrEqual(s.of);
      }
    }
    // the target-only model trains on the target's rows only, evaluated on the baseline's test rows
    expect(shared.trainRows).toBe(union.trainRows);
    expect(
      first.trials.find((t: { metrics: { strategy?: string } }) => t.metrics?.strategy === 'shared_embedding').metrics
        .finetuneRows,
    ).toBe(r.baseline.fitRows);
    // every arm, the shared embedding's included, is judged on the target's validation rows: the same count
    // for all (the union model that learned the embedding did not fit on them either)
    for (const t of first.trials.filter((t: { kind: string }) => t.kind === 'train'))
      expect(t.metrics.validationRows).toBe(r.validationRows);
    expect(r.validationRows).toBeGreaterThan(0);
    for (const x of r.results) {
      expect({ verdict: x.verdict, reason: x.reason }).toEqual(
        multiplyVerdict(
          x.validation.ciLow,
          x.validation.ciHigh,
          x.perSeed.map((p: { validationDeltaAuc: number }) => p.validationDeltaAuc),
        ),
      );
    }
  });

  it('lists it with the sample sets and data versions it came from, and exports the union model’s tables', async () => {
    const list = await call('GET', '/embeddings?businessLine=mall');
    expect(list.status).toBe(200);
    expect(list.body.items.map((e: EmbeddingEntry) => e.ref)).toEqual([ref]);
    const e = (await call('GET', `/embeddings/${ref}`)).body as EmbeddingEntry & { file?: string };
    console.log(renderEmbedding(e));
    expect(e.file).toBeUndefined(); // no server paths
    expect(e.experimentId).toBe(first.id);
    expect(e.sources.map((s) => [s.role, s.name, s.dataVersion])).toEqual([
      ['target', 'mall-samples', sets['mall-samples'].dataVersion],
      ['source', 'feed-samples', sets['feed-samples'].dataVersion],
    ]);
    const feedStats = first.result.sources.find((s: { domain: string }) => s.domain === 'feed/feed-samples');
    expect(e.sources[1].rows).toBe(feedStats.kept);
    // the export is the union model's slot tables, byte for byte, with what the ids stand for
    const res = await fetch(`${api.url}/api/v1/embeddings/${encodeURIComponent(ref)}/safetensors`, {
      headers: { authorization: `Bearer ${env.adminKey}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toContain(`${ref}.safetensors`);
    const file = path.join(env.dataDir, 'export.safetensors');
    fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()));
    expect(fs.statSync(file).size).toBe(e.bytes);
    const exported = await readSafetensors(file);
    const union = await checkpointTables(
      first.result.results.find((x: { strategy: string }) => x.strategy === 'shared_embedding').embedding.learnedOn.model,
    );
    const unionSpaces = modelIdSpaces(
      first.result.results.find((x: { strategy: string }) => x.strategy === 'shared_embedding').embedding.learnedOn.model,
    );
    expect(e.slots.map((s) => s.name)).not.toContain('__domain');
    for (const s of e.slots) {
      const t = exported.tensors.get(`embedding.${s.name}`)!;
      expect(t.shape).toEqual([s.rows, e.dim]);
      expect(
        Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).equals(
          Buffer.from(
            union.get(`embedding.${s.name}`)!.data.buffer,
            union.get(`embedding.${s.name}`)!.data.byteOffset,
            union.get(`embedding.${s.name}`)!.data.byteLength,
          ),
        ),
      ).toBe(true);
      expect(JSON.parse(exported.metadata[`idspace.${s.name}`])).toEqual(unionSpaces[s.name]);
    }
  });

  it('with frozen embeddings, the target model keeps exactly the carried rows of every value the embedding knows', async () => {
    const e = await run({
      kind: 'multiply',
      businessLine: 'mall',
      spec: {
        target: { sampleSet: 'mall-samples', features, training: TRAINING },
        sources: ['feed/feed-samples'],
        strategies: ['shared_embedding'],
        freezeEmbeddings: true,
        seeds: [1],
        bootstrap: 100,
        embedding: { shareWith: ['search'] },
      },
    });
    const shared = e.result.results[0];
    // a new experiment registers the next version of the same name
    expect(shared.embedding.ref).toBe('mall.feed.feed-samples@2');
    expect(shared.freezeEmbeddings).toBe(true);
    const exported = await readSafetensors(path.join(env.dataDir, 'export.safetensors'));
    const carried = (frozenModel: string) => {
      return checkpointTables(frozenModel).then((tables) => {
        const spaces = modelIdSpaces(frozenModel);
        let same = 0;
        let differ = 0;
        for (const name of shared.embedding.slots as string[]) {
          const src = exported.tensors.get(`embedding.${name}`)!;
          const srcSpace = JSON.parse(exported.metadata[`idspace.${name}`]) as SlotIdSpace;
          const dst = tables.get(`embedding.${name}`)!;
          const D = dst.shape[1];
          const dstSpace = spaces[name];
          // pairs (model id, embedding row) of the same value
          const pairs: [number, number][] = [];
          if (srcSpace.kind === 'dictionary' && dstSpace.kind === 'dictionary') {
            const rowOf = new Map(srcSpace.values.map((v, i) => [String(v), i + 1]));
            dstSpace.values.forEach((v, i) => {
              const r = rowOf.get(String(v));
              if (r !== undefined) pairs.push([i + 1, r]);
            });
          } else {
            expect([srcSpace.kind, dstSpace.kind]).toEqual(['identity', 'identity']);
            for (let i = 0; i < Math.min(src.shape[0], dst.shape[0]); i++) pairs.push([i, i]);
          }
          for (const [i, r] of pairs) {
            const a = dst.data.subarray(i * D, (i + 1) * D);
            const b = src.data.subarray(r * D, (r + 1) * D);
            if (a.every((x, k) => x === b[k])) same++;
            else differ++;
          }
        }
        return { same, differ };
      });
    };
    // version 2 was learned by the same (cached) union model as version 1, so its rows are the exported ones
    const frozen = await carried(shared.embedding.initialised[0].model);
    expect(frozen.differ).toBe(0);
    expect(frozen.same).toBeGreaterThan(10);
    // without freezing, training moved the carried rows
    const free = await carried(
      first.result.results.find((x: { strategy: string }) => x.strategy === 'shared_embedding').embedding.initialised[0].model,
    );
    expect(free.differ).toBeGreaterThan(free.same);
    const v2 = (await call('GET', '/embeddings/mall.feed.feed-samples@2')).body;
    expect(v2.sharingPolicy).toEqual({ shareWith: ['search'] });
  });
});

describe('a shared embedding in a later model spec', () => {
  it('starts an add experiment’s models from it ("init": {"embedding": "name@version"})', async () => {
    const e = await run({
      kind: 'add',
      businessLine: 'mall',
      spec: {
        base: {
          sampleSet: 'mall-samples',
          features: features.slice(0, -1),
          training: TRAINING,
          init: { embedding: ref },
        },
        candidates: [features[features.length - 1]],
        repeats: 1,
        folds: 4,
        bootstrap: 100,
        notify: false,
      },
    });
    const trains = e.trials.filter((t: { kind: string }) => t.kind === 'train');
    expect(trains.length).toBeGreaterThan(0);
    for (const t of trains) {
      expect(t.metrics.init.embedding).toBe(ref);
      expect(t.metrics.init.slots.some((s: { copied: number }) => s.copied > 1)).toBe(true);
    }
  });

  it('refuses an unknown embedding (400 naming the field) and one not shared with the line (403), queueing nothing', async () => {
    const before = await experimentCount();
    const spec = (embedding: string) => ({
      base: { sampleSet: 'search-samples', features: features.slice(0, -1), training: TRAINING, init: { embedding } },
      candidates: [features[features.length - 1]],
    });
    const unknown = await call('POST', '/experiments', { kind: 'add', businessLine: 'search', spec: spec('nope@3') });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain('spec.base.init.embedding');
    // version 1 is mall's own; version 2 is shared with search
    const forbidden = await call('POST', '/experiments', { kind: 'add', businessLine: 'search', spec: spec(ref) });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.message).toContain(`${ref} belongs to business line "mall" and is not shared with "search"`);
    expect(await experimentCount()).toBe(before);
    const allowed = await call('POST', '/experiments', {
      kind: 'add',
      businessLine: 'search',
      spec: spec('mall.feed.feed-samples@2'),
    });
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(201);
    await call('POST', `/experiments/${allowed.body.id}/cancel`);
  });
});

describe('multiply options: source weights, a registered-model target, frozen fine-tuning', () => {
  it('weighs borrowed rows in the union model (a different model than unweighted), and refuses weights for a non-source', async () => {
    const bad = await call('POST', '/experiments', {
      kind: 'multiply',
      businessLine: 'mall',
      spec: {
        target: { sampleSet: 'mall-samples', features },
        sources: ['feed/feed-samples'],
        sourceWeights: { 'search/search-samples': 2 },
      },
    });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('spec.sourceWeights.search/search-samples');
    const e = await run({
      kind: 'multiply',
      businessLine: 'mall',
      spec: {
        target: { sampleSet: 'mall-samples', features, training: TRAINING },
        sources: ['feed/feed-samples'],
        sourceWeights: { 'feed/feed-samples': 0.2 },
        strategies: ['union'],
        seeds: [1],
        bootstrap: 100,
      },
    });
    const weighted = e.result.results[0];
    expect(weighted.weights).toEqual({ 'feed/feed-samples': 0.2 });
    expect(e.spec.resolved.weights).toEqual({ 'feed/feed-samples': 0.2 });
    const plain = first.result.results.find((x: { strategy: string }) => x.strategy === 'union');
    expect(weighted.trainRows).toBe(plain.trainRows);
    const wTrial = e.trials.find((t: { metrics: { strategy?: string } }) => t.metrics?.strategy === 'union');
    const pTrial = first.trials.find((t: { metrics: { strategy?: string } }) => t.metrics?.strategy === 'union');
    expect(wTrial.metrics.perSeed[0].modelDir).not.toBe(pTrial.metrics.perSeed[0].modelDir);
    expect(weighted.perSeed[0].auc).not.toBe(plain.perSeed[0].auc);
    // the target-only baseline is the same model in both experiments
    expect(e.result.baseline.perSeed[0].auc).toBe(first.result.baseline.perSeed[0].auc);
  });

  it('takes a registered model as the target (its features, architecture and training) and freezes embeddings after pretraining', async () => {
    const model = await call('POST', '/models', {
      name: 'mall-base',
      businessLine: 'mall',
      sampleSetId: sets['mall-samples'].id,
      features,
      trainingParams: TRAINING,
    });
    expect(model.status, JSON.stringify(model.body)).toBe(201);
    const e = await run({
      kind: 'multiply',
      businessLine: 'mall',
      spec: {
        target: { model: 'mall-base' },
        sources: ['feed/feed-samples'],
        strategies: ['pretrain_finetune'],
        freezeEmbeddings: true,
        seeds: [1],
        bootstrap: 100,
      },
    });
    expect(e.spec.resolved.target.modelId).toBe(model.body.id);
    expect(e.spec.resolved.target.features).toEqual(features);
    const arm = e.result.results[0];
    expect(arm.freezeEmbeddings).toBe(true);
    // same samples and training as the sample-set target: the same baseline model
    expect(e.result.baseline.perSeed[0].auc).toBe(first.result.baseline.perSeed[0].auc);
  });
});

describe('the shared-embedding registry', () => {
  it('registers a retried trial’s version once, numbers versions per name, and keeps a name in one line', async () => {
    const { createDataSource } = await import('@abacus/data');
    const { EmbeddingService } = await import('@abacus/catalog');
    const ds = createDataSource(env.config);
    await ds.initialize();
    try {
      const svc = new EmbeddingService(ds);
      const input = (originKey: string, businessLine = 'feed') => ({
        name: 'feed.registry-test',
        businessLine,
        owner: 'test',
        dim: 2,
        slots: [],
        sources: [],
        sharingPolicy: { shareWith: [] },
        file: 'embeddings/none',
        bytes: 0,
        sha256: 'x',
        experimentId: null,
        originKey,
        provenance: {},
      });
      const [a, b, c] = await Promise.all([svc.register(input('o1')), svc.register(input('o2')), svc.register(input('o3'))]);
      expect([a.version, b.version, c.version].sort()).toEqual([1, 2, 3]);
      expect((await svc.register(input('o2'))).id).toBe(b.id);
      await expect(svc.register(input('o4', 'mall'))).rejects.toThrow('belongs to business line "feed"');
      expect(
        (await svc.list({ user: 't', role: 'admin', keyId: null }, { name: 'feed.registry-test', page: 1, pageSize: 10 })).total,
      ).toBe(3);
    } finally {
      await ds.destroy();
    }
  });
});

describe('every line may improve a shared embedding its owner lets it update', () => {
  const name = 'mall.feed.feed-samples';
  const versions = async () =>
    ((await call('GET', `/embeddings?name=${name}&pageSize=100`)).body.items as EmbeddingEntry[])
      .map((e) => e.version)
      .sort((a, b) => a - b);
  const update = (seeds: number[], line = 'search') =>
    call('POST', '/experiments', {
      kind: 'multiply',
      businessLine: line,
      spec: {
        target: { sampleSet: 'search-samples', features, training: TRAINING },
        strategies: ['embedding_update'],
        embedding: { update: `${name}@1` },
        seeds,
        bootstrap: 100,
      },
    });
  let searchKey: string;
  let v1Sha: string;

  it('a line outside updatableBy gets a 403 with nothing written; only the owner line sets the policy', async () => {
    const k = await call('POST', '/keys', { name: 'search-engineer', role: 'engineer', lines: ['search'] });
    expect(k.status, JSON.stringify(k.body)).toBe(201);
    searchKey = String(k.body.secret);
    v1Sha = String((await call('GET', `/embeddings/${name}@1`)).body.sha256);
    const before = { experiments: await experimentCount(), versions: await versions() };
    const refused = await update([1]);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/does not let "search" update it \(updatableBy: the owner line only\)/);
    expect({ experiments: await experimentCount(), versions: await versions() }).toEqual(before);
    // search may not set mall's policy; mall (the admin here) may
    const asSearch = apiClient(
      () => api.url,
      () => searchKey,
    );
    const notOwner = await asSearch.call('PATCH', `/embeddings/${name}/policy`, { updatableBy: ['search'] });
    expect(notOwner.status).toBe(403);
    const bad = await call('PATCH', `/embeddings/${name}/policy`, { updatableBy: ['Not A Line'] });
    expect(bad.status).toBe(400);
    expect(bad.body.issues!.map((i: { path: string }) => i.path)).toEqual(['updatableBy.0']);
    const set = await call('PATCH', `/embeddings/${name}/policy`, { updatableBy: ['search'] });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    for (const v of before.versions) {
      expect((await call('GET', `/embeddings/${name}@${v}`)).body.sharingPolicy.updatableBy).toEqual(['search']);
    }
  });

  it('two concurrent updates publish two distinct versions from the parent, each with its line, rows, ΔAUC and the owner’s check', async () => {
    const before = await versions();
    // both submitted before either runs
    const a = await update([1]);
    const b = await update([2]);
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    expect(b.status, JSON.stringify(b.body)).toBe(201);
    expect(a.body.spec.resolved.embeddingUpdate).toEqual({
      from: `${name}@1`,
      ownerCheck: { line: 'mall', sampleSetId: sets['mall-samples'].id },
    });
    const done = [];
    for (const id of [a.body.id, b.body.id]) {
      const e = await http.finished(String(id), 900_000, 'embedding update');
      expect(e.status, e.error ?? JSON.stringify(e.trials?.map((t: { error: string }) => t.error))).toBe('succeeded');
      done.push(e);
    }
    console.log(renderExperiment(done[0] as Experiment));
    const made = done.map((e) => e.result.results.find((r: { strategy: string }) => r.strategy === 'embedding_update'));
    const refs = made.map((r: { embedding: { ref: string } }) => r.embedding.ref);
    expect(new Set(refs).size).toBe(2);
    expect((await versions()).length).toBe(before.length + 2);
    for (const [k, r] of made.entries()) {
      const v = (await call('GET', `/embeddings/${encodeURIComponent(r.embedding.ref)}`)).body as EmbeddingEntry & {
        provenance: Record<string, any>;
      };
      // the name stays mall's; this version records its parent, the line that trained it, the set and rows used
      expect(v.businessLine).toBe('mall');
      expect(v.provenance).toMatchObject({
        strategy: 'update',
        parent: `${name}@1`,
        updatedBy: 'search',
        experimentId: done[k].id,
      });
      expect(v.sources).toEqual([expect.objectContaining({ businessLine: 'search', name: 'search-samples', role: 'target' })]);
      expect(v.sources[0]!.rows).toBeGreaterThan(1000);
      expect(v.sharingPolicy.updatableBy).toEqual(['search']);
      // what it brought search, against search's model without it (decided on validation, reported on test)
      expect(v.provenance.updateResult).toMatchObject({ line: 'search', verdict: r.verdict });
      expect(v.provenance.updateResult.validation.delta).toBeCloseTo(r.validation.delta, 12);
      expect(v.provenance.updateResult.test.delta).toBeCloseTo(r.deltaAuc.delta, 12);
      // the owner's check: mall's model from v1 and from this version, on mall's validation split
      const oc = v.provenance.ownerCheck;
      expect(oc).toMatchObject({ line: 'mall', parent: `${name}@1`, version: r.embedding.ref, split: 'validation' });
      expect(['helps', 'hurts', 'no clear difference']).toContain(oc.verdict);
      expect(oc.ciLow).toBeLessThanOrEqual(oc.delta);
      expect(oc.ciHigh).toBeGreaterThanOrEqual(oc.delta);
      expect(done[k].result.ownerCheck).toEqual(oc);
      expect(renderEmbedding(v)).toMatch(new RegExp(`owner check on mall: validation ΔAUC .* over ${name}@1: ${oc.verdict}`));
    }
    // versions are never overwritten: v1 is as it was
    const v1 = (await call('GET', `/embeddings/${name}@1`)).body as EmbeddingEntry & {
      usedBy: { businessLine: string; experiments: number }[];
    };
    expect(v1.sha256).toBe(v1Sha);
    // which lines use v1: mall (it learned it for its own models) and search (two updates)
    expect(v1.usedBy).toEqual([
      { businessLine: 'mall', experiments: expect.any(Number) },
      { businessLine: 'search', experiments: 2 },
    ]);
  });
});
