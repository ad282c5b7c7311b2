import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataSource } from 'typeorm';
import { createDataSource } from '@abacus/data';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { createTestEnv, queueKeys, type TestEnv } from '../support/test-env';
import { listDir, writeMalformedCsv, writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';

let env: TestEnv;
let api: ApiHandle;
let ds: DataSource;

const { call, upload } = apiClient(
  () => api.url,
  () => env.adminKey,
);

const count = async (table: string) => Number((await ds.query(`SELECT count(*)::int AS n FROM ${table}`))[0].n);

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
  expect((await call('POST', '/business-lines', { name: 'feed' })).status).toBe(201);
});

afterAll(async () => {
  await ds?.destroy();
  await api?.close();
  await env?.teardown();
});

describe('API input validation (real Postgres + Redis)', () => {
  it('reports health of Postgres, Redis and the runtime', async () => {
    const r = await call('GET', '/health');
    expect(r.status).toBe(200);
    expect(r.body.postgres).toMatchObject({ ok: true });
    expect(r.body.redis).toMatchObject({ ok: true });
    expect(r.body.runtime).toMatchObject({ configured: 'auto' });
  });

  it('rejects a bad business line name with the field path', async () => {
    const r = await call('POST', '/business-lines', { name: 'Bad Name!' });
    expect(r.status).toBe(400);
    expect(r.body.issues?.map((i) => i.path)).toEqual(['name']);
    expect(await count('business_lines')).toBe(1);
    expect(await count('audit_log')).toBe(2); // the test's admin key and business line feed
  });

  it('rejects an invalid experiment spec listing every issue path, writing nothing and enqueuing nothing', async () => {
    const r = await call('POST', '/experiments', {
      kind: 'score',
      businessLine: 'feed',
      spec: { sampleSet: 5, binning: { maxBins: 1, bogus: true } },
    });
    expect(r.status).toBe(400);
    const paths = r.body.issues?.map((i) => i.path) ?? [];
    expect(paths).toEqual(expect.arrayContaining(['spec.sampleSet', 'spec.binning.maxBins', 'spec.binning']));
    const unknownKind = await call('POST', '/experiments', { kind: 'multiply-everything', businessLine: 'feed', spec: {} });
    expect(unknownKind.status).toBe(400);
    expect(unknownKind.body.issues?.[0].path).toBe('kind');
    const missingSet = await call('POST', '/experiments', { kind: 'score', businessLine: 'feed', spec: { sampleSet: 'nope' } });
    expect(missingSet.status).toBe(400);
    expect(missingSet.body.issues?.[0].path).toBe('spec.sampleSet');
    expect(await count('experiments')).toBe(0);
    expect(await count('trials')).toBe(0);
    // only the queues' own metadata exists: no job was added
    expect((await queueKeys(env.config)).filter((k) => !k.endsWith(':meta'))).toEqual([]);
  });

  it('rejects a malformed CSV and an unknown label column, leaving no row and no file', async () => {
    const bad = path.join(env.dataDir, 'in', 'bad.csv');
    writeMalformedCsv(bad);
    const r1 = await upload('/sample-sets', bad, { name: 'bad', businessLine: 'feed', label: 'click' });
    expect(r1.status).toBe(400);
    expect(r1.body.issues?.[0].path).toBe('file');
    expect(r1.body.issues?.[0].message).toMatch(/^bad\.csv: line 4 has 5 field\(s\) where the header has 3/);

    const good = path.join(env.dataDir, 'in', 'good.csv');
    writeSmallCsv(good, 300);
    const r2 = await upload('/sample-sets', good, { name: 'good', businessLine: 'feed', label: 'clicked' });
    expect(r2.status).toBe(400);
    expect(r2.body.issues?.[0]).toMatchObject({ path: 'label' });
    expect(r2.body.issues?.[0].message).toMatch(/"clicked" is not in the file.*click/);

    const r3 = await upload('/sample-sets', good, { name: 'good', businessLine: 'nowhere', label: 'click' });
    expect(r3.status).toBe(400);
    expect(r3.body.issues?.[0].path).toBe('businessLine');

    const r4 = await upload('/sample-sets', good, { name: 'good', businessLine: 'feed', label: 'strong' });
    expect(r4.status).toBe(400);
    expect(r4.body.issues?.[0].message).toMatch(/exactly 2 classes/);

    const r5 = await call('POST', '/sample-sets', { name: 'x', businessLine: 'feed', label: 'click' });
    expect(r5.status).toBe(400);
    expect(r5.body.issues?.[0].path).toBe('file');

    expect(await count('sample_sets')).toBe(0);
    expect(listDir(path.join(env.dataDir, 'sample-sets'))).toEqual([]);
    expect(listDir(path.join(env.dataDir, 'tmp'))).toEqual([]);
  });

  it('imports a CSV sample set as Parquet and lists it; a second import of the same name conflicts', async () => {
    const good = path.join(env.dataDir, 'in', 'good.csv');
    writeSmallCsv(good, 300);
    const r = await upload('/sample-sets', good, { name: 'good', businessLine: 'feed', label: 'click', time: 'ts' });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      rowCount: 300,
      labelColumn: 'click',
      timeColumn: 'ts',
      timeMin: 1000,
      timeMax: 1299,
      format: 'csv',
    });
    expect((r.body.schema as { name: string; kind: string }[]).find((c) => c.name === 'color')?.kind).toBe('categorical');
    const again = await upload('/sample-sets', good, { name: 'good', businessLine: 'feed', label: 'click' });
    expect(again.status).toBe(409);
    const list = await call('GET', '/sample-sets?businessLine=feed');
    expect(list.body.total).toBe(1);
    expect(listDir(path.join(env.dataDir, 'sample-sets')).filter((f) => f.endsWith('.parquet'))).toHaveLength(1);
  });

  it("validates list queries and filters by the caller's business lines", async () => {
    expect((await call('GET', '/experiments?pageSize=0')).status).toBe(400);
    expect((await call('GET', '/experiments?status=done')).body.issues?.[0].path).toBe('status');
    const created = await call('POST', '/keys', { name: 'search-viewer', role: 'viewer', lines: ['search'] });
    expect(created.status, JSON.stringify(created.body)).toBe(400); // search is not a business line yet
    expect(created.body.issues?.[0].path).toBe('lines.0');
    expect((await call('POST', '/business-lines', { name: 'search' })).status).toBe(201);
    const key = await call('POST', '/keys', { name: 'search-viewer', role: 'viewer', lines: ['search'] });
    expect(key.status).toBe(201);
    const res = await fetch(`${api.url}/api/v1/sample-sets`, { headers: { authorization: `Bearer ${key.body.secret}` } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { total: number }).total).toBe(0);
    expect((await call('GET', '/sample-sets')).body.total).toBe(1);
  });

  it('serves the OpenAPI document', async () => {
    const res = await fetch(`${api.url}/api/docs-json`);
    const doc = (await res.json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/api/v1/experiments', '/api/v1/sample-sets', '/api/v1/health']),
    );
  });
});
