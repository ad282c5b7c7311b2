import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource, FeatureEntity } from '@abacus/data';
import { simulateWorld, writeWorld, type GroundTruth } from '@abacus/samples';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { apiClient } from '../support/http';
import { cli } from '../support/processes';

/**
 * discover on a world with planted derived effects: the screen ranks the expressions that carry them
 * first, the verified comparison adopts them, and the adopted ones are registered with provenance.
 */
let env: TestEnv;
let api: ApiHandle;
let worker: WorkerHandle;
let ds: DataSource;
let truth: GroundTruth;
const http = apiClient(
  () => api.url,
  () => env.adminKey,
);

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  worker = await startWorker(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
  const dir = path.join(env.dataDir, 'world');
  const world = simulateWorld({ seed: 21, rows: 150_000, derivedEffects: true });
  await writeWorld(world, dir);
  truth = world.groundTruth;
  await http.call('POST', '/business-lines', { name: 'feed' });
  const r = await http.upload('/sample-sets', path.join(dir, 'samples', 'feed.parquet'), {
    name: 'feed-samples',
    businessLine: 'feed',
    label: 'click',
    time: 'ts',
    keys: 'impression_id,user_id,item_id,context_id,domain',
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}, 600_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await ds?.destroy();
  await env?.teardown();
});

describe('discover', () => {
  it('proposes the planted expressions, verifies them with add, and registers the adopted ones', async () => {
    const features = truth.features.filter((f) => f.inConfigOf.includes('feed')).map((f) => f.name);
    const r = await http.call('POST', '/experiments', {
      kind: 'discover',
      businessLine: 'feed',
      spec: {
        base: { sampleSet: 'feed-samples', features },
        families: ['column', 'ratio', 'cross', 'rate', 'count'],
        windows: ['7d'],
        maxCandidates: 300,
        topK: 5,
        seeds: 3,
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const e = await http.finished(String(r.body.id), 900_000, 'discover experiment');
    expect(e.status, e.error ?? JSON.stringify(e.trials?.map((t: { kind: string; status: string; error?: string }) => [t.kind, t.status, t.error]))).toBe('succeeded');
    // the screen's ranking: the three planted expressions among the five sent on, above every expression over noise columns only
    const ranked = (await http.call('GET', `/experiments/${e.id}/results?scorer=discover_screen`)).body as {
      featureName: string;
      value: number;
      rank: number;
      details: { text: string; chosen: boolean; columns: string[] };
    }[];
    const chosen = (e.result.chosen as { text: string }[]).map((c) => c.text);
    expect(chosen).toHaveLength(5);
    const planted = truth.derived!.map((d) => d.expression.replace(/buckets: \d+/, ''));
    for (const p of planted) expect(chosen.some((c) => c.replace(/buckets: \d+/, '') === p), `${p} in ${chosen}`).toBe(true);
    const noise = new Set(truth.features.filter((f) => f.role === 'noise').map((f) => f.name));
    const rankOf = (p: string) => ranked.find((x) => x.details.text.replace(/buckets: \d+/, '') === p)!.rank;
    const noiseRanks = ranked.filter((x) => x.details.columns.every((c) => noise.has(c))).map((x) => x.rank);
    expect(noiseRanks.length).toBeGreaterThan(0);
    for (const p of planted) expect(rankOf(p)).toBeLessThan(Math.min(...noiseRanks));
    expect(e.result.candidates).toBeGreaterThan(100);
    const adopted = e.result.adopted as string[];
    const registered = await ds.getRepository(FeatureEntity).findBy({ businessLine: 'feed' });
    for (const name of e.result.registered as string[]) {
      const f = registered.find((x) => x.name === name)!;
      expect(f.expression).not.toBeNull();
      expect(f.provenance.some((p) => p.experimentId === e.id && p.verdict === 'adopt')).toBe(true);
      // and costs, measured as any registered feature's
      const measured = (f.costs as { measured?: { storage?: { bytesPerRow?: number; how?: string } } }).measured;
      expect(measured?.storage?.how, name).toMatch(/expressions computed over/);
    }
    if ((e.result.registered as string[]).length) expect(e.result.costs).toMatchObject({ measured: (e.result.registered as string[]).length });
    expect(e.result.registered).toEqual(adopted);
    // the command line shows the same
    const as = { ...env.env, ABACUS_API_URL: api.url, ABACUS_API_KEY: env.adminKey };
    const show = await cli(['experiment', 'show', String(e.id)], as);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/screened \d+ candidate expression\(s\) on \d+ fitted rows against the base model; 5 sent to the verified comparison/);
    expect(show.stdout).toContain('cross(d_region, d_slot');
    const bad = await cli(['discover', '--domain', 'feed'], as);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/name the base as --model or as --samples/);
    const wrong = await cli(['discover', '--domain', 'feed', '--samples', 'feed-samples', '--families', 'ratios'], as);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/spec\.families\.0/);
  }, 900_000);

  it("reads the base model's feature-table features: planted effects over columns moved into a table are found, and the cross adopted and registered", async () => {
    // the samples without d_slot and d_visits, which come from a point-in-time table keyed by impression
    // (each row at its impression's time: the value as of the impression is its own)
    const dir = path.join(env.dataDir, 'world');
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    const feed = path.join(dir, 'samples', 'feed.parquet');
    await con.run(`COPY (SELECT * EXCLUDE (d_slot, d_visits) FROM '${feed}') TO '${path.join(dir, 'feed-nt.parquet')}' (FORMAT parquet)`);
    await con.run(`COPY (SELECT impression_id, ts, d_slot, d_visits FROM '${feed}') TO '${path.join(dir, 'derived.parquet')}' (FORMAT parquet)`);
    con.closeSync();
    db.closeSync();
    const s = await http.upload('/sample-sets', path.join(dir, 'feed-nt.parquet'), {
      name: 'feed-nt',
      businessLine: 'feed',
      label: 'click',
      time: 'ts',
      keys: 'impression_id,user_id,item_id,context_id,domain',
    });
    expect(s.status, JSON.stringify(s.body)).toBe(201);
    const t = await http.upload('/feature-tables', path.join(dir, 'derived.parquet'), { name: 'derived', businessLine: 'feed', entityKey: 'impression_id', time: 'ts' });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    const features = [...truth.features.filter((f) => f.inConfigOf.includes('feed')).map((f) => f.name), 'd_slot', 'd_visits'];
    const r = await http.call('POST', '/experiments', {
      kind: 'discover',
      businessLine: 'feed',
      spec: { base: { sampleSet: 'feed-nt', features }, families: ['cross', 'ratio', 'rate'], windows: ['7d'], maxCandidates: 300, topK: 3, seeds: 5 },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const e = await http.finished(String(r.body.id), 900_000, 'discover experiment');
    expect(e.status, e.error ?? JSON.stringify(e.trials?.map((x: { kind: string; status: string; error?: string }) => [x.kind, x.status, x.error]))).toBe('succeeded');
    const chosen = e.result.chosen as { name: string; text: string; verdict: string }[];
    const texts = JSON.stringify(chosen.map((c) => [c.text, c.verdict]));
    // the planted cross, one part from the table, is sent on and adopted; the planted ratio, a part from
    // the table, ranks above every expression over noise columns only
    const cross = chosen.find((c) => /^cross\(d_region, @d_slot, buckets: \d+\)$/.test(c.text));
    expect(cross, texts).toBeDefined();
    expect(cross!.verdict, texts).toBe('adopt');
    const ranked = (await http.call('GET', `/experiments/${e.id}/results?scorer=discover_screen`)).body as {
      rank: number;
      details: { text: string; columns: string[] };
    }[];
    const noise = new Set(truth.features.filter((x) => x.role === 'noise').map((x) => x.name));
    const noiseRanks = ranked.filter((x) => x.details.columns.every((c) => noise.has(c))).map((x) => x.rank);
    expect(noiseRanks.length).toBeGreaterThan(0);
    const ratio = ranked.find((x) => x.details.text === 'd_spend / @d_visits');
    expect(ratio, JSON.stringify(ranked.slice(0, 10).map((x) => x.details.text))).toBeDefined();
    expect(ratio!.details.columns).toEqual(['@d_visits', 'd_spend']);
    expect(ratio!.rank).toBeLessThan(Math.min(...noiseRanks));
    // the table's category partitions the click rates too (a key with it, from the values each row had)
    expect(ranked.some((x) => x.details.text === 'rate(by: [user_id, @d_slot], over: 7d)')).toBe(true);
    // registered with where its table part comes from, its provenance and measured costs
    const f = await ds.getRepository(FeatureEntity).findOneByOrFail({ businessLine: 'feed', name: cross!.name });
    expect(f.expression!.lineage).toMatchObject({ columns: ['d_region'], refs: ['d_slot'], tables: [{ feature: 'd_slot', table: 'derived' }] });
    expect(f.provenance.some((p) => p.experimentId === e.id && p.verdict === 'adopt')).toBe(true);
    expect((f.costs as { measured?: { storage?: { how?: string } } }).measured?.storage?.how).toMatch(/expressions computed over/);
  }, 900_000);
});
