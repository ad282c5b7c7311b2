import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataDir, SampleSetData } from '@abacus/catalog';
import { ObjectCache, StoreRegistry } from '@abacus/store';
import { simulateWorld, writeWorld, type GroundTruth, type SimWorld } from '@abacus/samples';
import { BuiltSamplesCache, ModelTrainer, labelRateFlag, multiplyVerdict } from '@abacus/workflows';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { renderExperiment, type Experiment } from '../../apps/cli/src/commands/experiment.command';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';

let env: TestEnv;
let api: ApiHandle;
let worker: WorkerHandle;
let world: SimWorld;
let truth: GroundTruth;

const http = apiClient(
  () => api.url,
  () => env.adminKey,
);
const call = http.call;
async function upload(file: string, fields: Record<string, string>) {
  const r = await http.upload('/sample-sets', file, fields);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

async function run(body: unknown): Promise<Record<string, any>> {
  const r = await call('POST', '/experiments', body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return http.finished(String(r.body.id), 600_000, 'multiply experiment');
}

const experimentCount = async () => (await call('GET', '/experiments?pageSize=500')).body.total as number;
const KEYS = 'impression_id,user_id,item_id,context_id,domain';
const TRAINING = { epochs: 4, batchSize: 512 };
const SEEDS = [1, 2];
let features: string[];

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  worker = await startWorker(env.config, { logger: false });
  const dir = path.join(env.dataDir, 'world');
  // feed, search and mall as in the plain world, plus the line whose planted effects are unrelated to theirs
  world = simulateWorld({ seed: 11, rows: 150_000, unrelatedLine: true });
  await writeWorld(world, dir);
  truth = world.groundTruth;
  features = truth.features.filter((f) => f.inConfigOf.includes('mall')).map((f) => f.name);
  for (const line of ['feed', 'search', 'mall']) await call('POST', '/business-lines', { name: line });
  await upload(path.join(dir, 'samples', 'mall.parquet'), {
    name: 'mall-samples',
    businessLine: 'mall',
    label: 'click',
    time: 'ts',
    keys: KEYS,
  });
  await upload(path.join(dir, 'samples', 'feed.parquet'), {
    name: 'feed-samples',
    businessLine: 'feed',
    label: 'click',
    time: 'ts',
    keys: KEYS,
    shareWith: 'mall',
  });
  await upload(path.join(dir, 'samples', 'search.parquet'), {
    name: 'search-samples',
    businessLine: 'search',
    label: 'click',
    time: 'ts',
    keys: KEYS,
    shareWith: '*',
  });
  // the same feed rows, not shared with anyone
  await upload(path.join(dir, 'samples', 'feed.parquet'), {
    name: 'feed-private',
    businessLine: 'feed',
    label: 'click',
    time: 'ts',
    keys: KEYS,
  });
}, 600_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await env?.teardown();
});

describe('multiply: refused before anything is queued', () => {
  it('403 for a source whose sharing policy leaves the line out, naming the set and the line', async () => {
    const before = await experimentCount();
    const r = await call('POST', '/experiments', {
      kind: 'multiply',
      businessLine: 'mall',
      spec: { target: { sampleSet: 'mall-samples' }, sources: ['search/search-samples', 'feed/feed-private'] },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(403);
    expect(r.body.message).toContain('spec.sources.1');
    expect(r.body.message).toContain('"feed-private"');
    expect(r.body.message).toContain('"mall"');
    expect(await experimentCount()).toBe(before);
  });

  it('400 naming the column for a kind mismatch, and for another label semantics', async () => {
    const small = path.join(env.dataDir, 'in', 'small.csv');
    writeSmallCsv(small, 400);
    // `color` as numbers: categorical in the target, numeric in the source
    const lines = fs.readFileSync(small, 'utf8').trim().split('\n');
    const numeric = path.join(env.dataDir, 'in', 'numeric-color.csv');
    fs.writeFileSync(
      numeric,
      [
        lines[0],
        ...lines
          .slice(1)
          .map((l) => l.replace(/,(red|green|blue),/, (_m, c: string) => `,${['red', 'green', 'blue'].indexOf(c)},`)),
      ].join('\n') + '\n',
    );
    await upload(small, { name: 'mall-small', businessLine: 'mall', label: 'click', time: 'ts' });
    await upload(numeric, { name: 'feed-small', businessLine: 'feed', label: 'click', time: 'ts', shareWith: 'mall' });
    await upload(small, {
      name: 'search-orders',
      businessLine: 'search',
      label: 'click',
      time: 'ts',
      shareWith: '*',
      labelSemantics: 'click->order',
    });
    const before = await experimentCount();
    const kinds = await call('POST', '/experiments', {
      kind: 'multiply',
      businessLine: 'mall',
      spec: { target: { sampleSet: 'mall-small' }, sources: ['feed/feed-small'] },
    });
    expect(kinds.status, JSON.stringify(kinds.body)).toBe(400);
    expect(kinds.body.issues?.[0].path).toBe('spec.sources.0');
    expect(kinds.body.issues?.[0].message).toContain(
      'column "color" is numeric in feed/feed-small but categorical in the target',
    );
    const semantics = await call('POST', '/experiments', {
      kind: 'multiply',
      businessLine: 'mall',
      spec: { target: { sampleSet: 'mall-small' }, sources: ['search/search-orders'] },
    });
    expect(semantics.status).toBe(400);
    expect(semantics.body.issues?.[0].message).toContain('label semantics click->order');
    expect(await experimentCount()).toBe(before);
  });
});

let e: Record<string, any>;

describe('multiply on the simulator: mall borrowing from feed and search', () => {
  it('runs target-only, union and pretrain → fine-tune per source and together, on the target test rows only', async () => {
    e = await run({
      kind: 'multiply',
      businessLine: 'mall',
      spec: {
        target: { sampleSet: 'mall-samples', features, training: TRAINING },
        sources: ['feed/feed-samples', 'search/search-samples'],
        seeds: SEEDS,
        bootstrap: 200,
      },
    });
    expect(e.status, e.error ?? JSON.stringify(e.trials?.map((t: { error: string }) => t.error))).toBe('succeeded');
    // the pretraining / fine-tuning trials copied their row sets into scratch folders, gone with them
    const tmp = path.join(env.dataDir, 'tmp');
    expect(fs.existsSync(tmp) ? fs.readdirSync(tmp).filter((n) => n.startsWith('scratch-')) : []).toEqual([]);
    const r = e.result;
    // what the run measured, for the record
    console.log(renderExperiment(e as Experiment));
    expect(r.results.map((x: { strategy: string; sources: string[] }) => `${x.strategy}:${x.sources.join('+')}`)).toEqual([
      'union:feed/feed-samples',
      'union:search/search-samples',
      'union:feed/feed-samples+search/search-samples',
      'pretrain_finetune:feed/feed-samples',
      'pretrain_finetune:search/search-samples',
      'pretrain_finetune:feed/feed-samples+search/search-samples',
      'shared_embedding:feed/feed-samples',
      'shared_embedding:search/search-samples',
      'shared_embedding:feed/feed-samples+search/search-samples',
    ]);
    // decisions on the validation split, reported numbers on the test split
    expect(r.splits).toEqual({ decisions: 'validation', reported: 'test' });
    // the leakage check: exactly the borrowed impressions at or after the target's validation start are
    // dropped (those at or after its test start counted apart)
    const imp = world.impressions;
    // the sample files hold ts as integers
    const ts = Int32Array.from(imp.ts);
    const rateBefore = (d: number) => {
      let n = 0;
      let clicks = 0;
      for (let i = 0; i < ts.length; i++) {
        if (imp.domainIndex[i] === d && ts[i] < r.testFrom) {
          n++;
          clicks += imp.click[i];
        }
      }
      return clicks / n;
    };
    const targetRate = rateBefore(imp.domains.indexOf('mall'));
    expect(r.targetLabelRate).toBeCloseTo(targetRate, 12);
    expect(r.validationFrom).toBeLessThan(r.testFrom);
    for (const s of r.sources as {
      domain: string;
      rows: number;
      kept: number;
      droppedAtOrAfterTestStart: number;
      droppedAtOrAfterValidationStart: number;
      labelRate: number;
      labelRateFlag: string | null;
      duplicatesDropped: number;
    }[]) {
      const d = imp.domains.indexOf(s.domain.split('/')[0]);
      let rows = 0;
      let late = 0;
      let lateValidation = 0;
      for (let i = 0; i < imp.ts.length; i++) {
        if (imp.domainIndex[i] !== d) continue;
        rows++;
        if (ts[i] >= r.testFrom) late++;
        else if (ts[i] >= r.validationFrom) lateValidation++;
      }
      expect(s.labelRate).toBeCloseTo(rateBefore(d), 12);
      expect(s.labelRateFlag).toBe(labelRateFlag(s.labelRate, r.targetLabelRate));
      expect(s.rows).toBe(rows);
      expect(s.droppedAtOrAfterTestStart).toBe(late);
      expect(late).toBeGreaterThan(0);
      expect(s.droppedAtOrAfterValidationStart).toBe(lateValidation);
      expect(lateValidation).toBeGreaterThan(0);
      expect(s.kept).toBe(rows - late - lateValidation - s.duplicatesDropped);
    }
    // test rows: the target's rows at or after the test start, nothing borrowed; validation rows: the
    // target's last 20% of training rows, from the validation start (ties at the start may be fitted on)
    const mall = imp.domains.indexOf('mall');
    let mallTest = 0;
    let mallFromValidation = 0;
    let mallAfterValidation = 0;
    for (let i = 0; i < ts.length; i++) {
      if (imp.domainIndex[i] !== mall) continue;
      if (ts[i] >= r.testFrom) mallTest++;
      else if (ts[i] >= r.validationFrom) {
        mallFromValidation++;
        if (ts[i] > r.validationFrom) mallAfterValidation++;
      }
    }
    expect(r.testRows).toBe(mallTest);
    expect(r.validationRows).toBe(Math.round(0.2 * r.baseline.trainRows));
    expect(r.validationRows).toBeLessThanOrEqual(mallFromValidation);
    expect(r.validationRows).toBeGreaterThan(mallAfterValidation);
    expect(r.baseline.fitRows).toBe(r.baseline.trainRows - r.validationRows);
    // per-source training rows: target train rows + the kept rows of each borrowed set
    for (const x of r.results) {
      expect(x.borrowed.map((b: { domain: string }) => b.domain)).toEqual(x.sources);
      expect(x.trainRows).toBe(r.baseline.trainRows + x.borrowed.reduce((a: number, b: { kept: number }) => a + b.kept, 0));
      expect(x.validation.split).toBe('validation');
      expect(x.deltaAuc.split).toBe('test');
      // the verdict follows the documented rule from the validation numbers it reports
      expect({ verdict: x.verdict, reason: x.reason }).toEqual(
        multiplyVerdict(
          x.validation.ciLow,
          x.validation.ciHigh,
          x.perSeed.map((p: { validationDeltaAuc: number }) => p.validationDeltaAuc),
        ),
      );
      x.perSeed.forEach(
        (p: { seed: number; auc: number; deltaAuc: number; validationAuc: number; validationDeltaAuc: number }, k: number) => {
          expect(p.seed).toBe(SEEDS[k]);
          expect(p.deltaAuc).toBeCloseTo(p.auc - r.baseline.perSeed[k].auc, 9);
          expect(p.validationDeltaAuc).toBeCloseTo(p.validationAuc - r.baseline.perSeed[k].validationAuc, 9);
        },
      );
      for (const d of [x.deltaAuc, x.validation]) {
        expect(d.ciLow).toBeLessThanOrEqual(d.delta);
        expect(d.ciHigh).toBeGreaterThanOrEqual(d.delta);
      }
    }
    // best: the recommended arm with the largest validation ΔAUC
    expect(r.best, 'no strategy was recommended').not.toBeNull();
    const recommended = r.results.filter((x: { verdict: string }) => x.verdict === 'recommend');
    const best = r.results.find(
      (x: { strategy: string; sources: string[] }) =>
        x.strategy === r.best.strategy && x.sources.join() === r.best.sources.join(),
    );
    expect(best.verdict).toBe('recommend');
    expect(r.best.chosenOn).toBe('validation');
    expect(r.best.validationDelta).toBe(best.validation.delta);
    expect(best.validation.delta).toBe(
      Math.max(...recommended.map((x: { validation: { delta: number } }) => x.validation.delta)),
    );
    expect(best.deltaAuc.delta).toBe(r.best.deltaAuc);
    // the acceptance, on the untouched test split: the arm chosen on validation gains at least +0.004
    // test AUC from borrowing the big lines, with an interval above 0 and a gain on every training seed
    expect(r.best.deltaAuc).toBeGreaterThanOrEqual(0.004);
    expect(best.deltaAuc.ciLow).toBeGreaterThan(0);
    expect(best.perSeed).toHaveLength(SEEDS.length);
    for (const p of best.perSeed as { deltaAuc: number }[]) expect(p.deltaAuc).toBeGreaterThan(0);
  });

  it('its target-only baseline is a plain training on the target sample set alone', async () => {
    const dataDir = new DataDir(env.dataDir);
    const ss = (await call('GET', '/sample-sets?businessLine=mall&pageSize=500')).body.items.find(
      (s: { name: string }) => s.name === 'mall-samples',
    );
    // the set read as the worker reads it: an upload's file, or a set registered by reference through a cache
    const data = new SampleSetData(dataDir, new StoreRegistry(), new ObjectCache(path.join(env.dataDir, 'test-cache'), 2 ** 30));
    const samples = new BuiltSamplesCache(dataDir, { openSamples: () => data.open(ss) });
    const trainer = new ModelTrainer(dataDir, { backend: 'cpu', threads: 2 });
    const recipe = {
      sampleSetId: ss.id,
      sampleFile: ss.files[0],
      ...(ss.dataVersion ? { sampleVersion: ss.dataVersion as string } : {}),
      label: 'click',
      positive: null,
      time: 'ts',
      testFrom: e.result.testFrom,
      filter: null,
      features: features.map((name) => ({
        name,
        kind: ss.schema.find((c: { name: string }) => c.name === name).kind,
        source: { kind: 'column' as const },
      })),
      architecture: e.spec.target.architecture,
      training: { ...e.spec.target.training, seed: SEEDS[0] },
      modelId: null,
    };
    const built = await samples.get(recipe);
    const trained = await trainer.trainOrReuse(built, recipe.architecture, recipe.training);
    expect(built.test.rows).toBe(e.result.testRows);
    // the training split: the rows fitted on and the validation rows carved off its end
    expect(built.train.rows + built.validation.rows).toBe(e.result.baseline.trainRows);
    // the same validation rows as multiply's (the target's last 20% of its training rows) and the same fitted rows
    expect(built.validation.rows).toBe(e.result.validationRows);
    expect(built.train.rows).toBe(e.result.baseline.fitRows);
    expect(trained.metrics.auc).toBeCloseTo(e.result.baseline.perSeed[0].auc, 6);
    expect(trained.metrics.validation.auc).toBeCloseTo(e.result.baseline.perSeed[0].validationAuc, 6);
  });
});

describe('multiply with auto sources, one of them unrelated to the target', () => {
  it('finds every compatible shared set, does not recommend the simulated unrelated line and ranks the related ones above it', async () => {
    // the simulator's fourth line: same columns and label semantics, planted effects unrelated to mall's
    const unrelatedLine = truth.domains.find((d) => d.unrelated)!.name;
    const relatedLines = truth.domains.filter((d) => !d.unrelated && d.name !== 'mall').map((d) => d.name);
    expect(relatedLines.sort()).toEqual(['feed', 'search']);
    await call('POST', '/business-lines', { name: unrelatedLine });
    await upload(path.join(env.dataDir, 'world', 'samples', `${unrelatedLine}.parquet`), {
      name: `${unrelatedLine}-samples`,
      businessLine: unrelatedLine,
      label: 'click',
      time: 'ts',
      keys: KEYS,
      shareWith: '*',
    });
    const e = await run({
      kind: 'multiply',
      businessLine: 'mall',
      spec: {
        target: { sampleSet: 'mall-samples', features, training: TRAINING },
        sources: 'auto',
        strategies: ['union'],
        seeds: SEEDS,
        bootstrap: 200,
      },
    });
    expect(e.status, e.error ?? JSON.stringify(e.trials?.map((t: { error: string }) => t.error))).toBe('succeeded');
    console.log(renderExperiment(e as Experiment));
    // not the private feed copy, not the small sets without the target's columns, not another label semantics
    const unrelatedSet = `${unrelatedLine}/${unrelatedLine}-samples`;
    expect(e.spec.resolved.sources.map((s: { domain: string }) => s.domain).sort()).toEqual(
      [unrelatedSet, 'feed/feed-samples', 'search/search-samples'].sort(),
    );
    const by = (d: string) => e.result.results.find((x: { sources: string[] }) => x.sources.length === 1 && x.sources[0] === d);
    const unrelated = by(unrelatedSet);
    expect(unrelated.verdict).not.toBe('recommend');
    for (const line of relatedLines) {
      expect(by(`${line}/${line}-samples`).deltaAuc.delta).toBeGreaterThan(unrelated.deltaAuc.delta);
    }
  });
});

describe('multiply with a source that repeats another one', () => {
  it('drops the rows identical to an earlier source and trains as if the copy were not there', async () => {
    const dir = path.join(env.dataDir, 'world', 'samples');
    await upload(path.join(dir, 'feed.parquet'), {
      name: 'feed-copy',
      businessLine: 'search',
      label: 'click',
      time: 'ts',
      keys: KEYS,
      shareWith: 'mall',
    });
    const d = await run({
      kind: 'multiply',
      businessLine: 'mall',
      spec: {
        target: { sampleSet: 'mall-samples', features, training: TRAINING },
        sources: ['feed/feed-samples', 'search/feed-copy'],
        strategies: ['union'],
        perSource: false,
        seeds: SEEDS,
        bootstrap: 200,
      },
    });
    expect(d.status, d.error ?? JSON.stringify(d.trials?.map((t: { error: string }) => t.error))).toBe('succeeded');
    const [feed, copy] = d.result.sources;
    expect(copy.domain).toBe('search/feed-copy');
    expect(copy.duplicatesDropped).toBe(copy.rows - copy.droppedAtOrAfterTestStart - copy.droppedAtOrAfterValidationStart);
    expect(copy.kept).toBe(0);
    expect(feed.duplicatesDropped).toBe(0);
    const [arm] = d.result.results;
    expect(arm.trainRows).toBe(d.result.baseline.trainRows + feed.kept);
    // the same rows and vocabulary as borrowing feed alone: the same models
    const feedAlone = e.result.results.find(
      (x: { strategy: string; sources: string[] }) => x.strategy === 'union' && x.sources.join() === 'feed/feed-samples',
    );
    expect(arm.perSeed.map((p: { auc: number }) => p.auc)).toEqual(feedAlone.perSeed.map((p: { auc: number }) => p.auc));
  });
});
