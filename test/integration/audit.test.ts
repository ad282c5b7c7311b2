import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource } from '@abacus/data';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';

let env: TestEnv;
let api: ApiHandle;
let ds: DataSource;
let engineerKey: { id: string; secret: string };
const admin = apiClient(
  () => api.url,
  () => env.adminKey,
);
const engineer = apiClient(
  () => api.url,
  () => engineerKey.secret,
);

interface Entry {
  at: string;
  actorKeyId: string | null;
  actorName: string;
  actorRole: string;
  action: string;
  businessLine: string | null;
  targetType: string;
  targetId: string;
  details: Record<string, unknown>;
}

const audit = async (q = '') => {
  const r = await admin.call('GET', `/audit${q}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { items: Entry[]; total: number; page: number; pageSize: number };
};

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
});

afterAll(async () => {
  await ds?.destroy();
  await api?.close();
  await env?.teardown();
});

describe('audit log (real Postgres + Redis)', () => {
  it('records who did what: keys, lines, imports, features, models, experiments', async () => {
    const since = new Date().toISOString();
    expect((await admin.call('POST', '/business-lines', { name: 'feed' })).status).toBe(201);
    const k = await admin.call('POST', '/keys', { name: 'ana', role: 'engineer', lines: ['feed'] });
    engineerKey = { id: k.body.id, secret: k.body.secret };
    const csv = path.join(env.dataDir, 'in', 'small.csv');
    writeSmallCsv(csv, 300);
    const ss = await engineer.upload('/sample-sets', csv, { name: 'small', businessLine: 'feed', label: 'click', time: 'ts' });
    expect(ss.status).toBe(201);
    const users = path.join(env.dataDir, 'in', 'users.csv');
    fs.writeFileSync(users, 'user_id,age\n1,31\n2,45\n');
    const table = await engineer.upload('/feature-tables', users, { name: 'users', businessLine: 'feed', entityKey: 'user_id' });
    expect(table.status).toBe(201);
    const f = await engineer.call('POST', '/features', { name: 'ctr_7d', businessLine: 'feed', kind: 'numeric' });
    expect((await engineer.call('PATCH', `/features/${f.body.id}`, { description: 'click rate, 7 days' })).status).toBe(200);
    const m = await engineer.call('POST', '/models', { name: 'base', businessLine: 'feed', sampleSetId: ss.body.id });
    expect(m.status).toBe(201);
    const e = await engineer.call('POST', '/experiments', { kind: 'score', businessLine: 'feed', spec: { sampleSet: 'small' } });
    expect(e.status).toBe(201);
    expect((await engineer.call('POST', `/experiments/${e.body.id}/cancel`)).status).toBe(200);
    const spare = await admin.call('POST', '/keys', { name: 'spare', role: 'viewer', lines: ['*'] });
    expect((await admin.call('POST', `/keys/${spare.body.id}/revoke`)).status).toBe(200);

    const page = await audit(`?since=${encodeURIComponent(since)}&pageSize=100`);
    const rows = page.items.map((x) => [x.action, x.actorName, x.businessLine, x.targetType, x.targetId]).reverse();
    expect(rows).toEqual([
      ['business_line.created', 'test-admin', 'feed', 'business_line', 'feed'],
      ['key.created', 'test-admin', null, 'api_key', engineerKey.id],
      ['sample_set.imported', 'ana', 'feed', 'sample_set', ss.body.id],
      ['feature_table.imported', 'ana', 'feed', 'feature_table', table.body.table.id],
      ['feature.registered', 'ana', 'feed', 'feature', f.body.id],
      ['feature.updated', 'ana', 'feed', 'feature', f.body.id],
      ['model.created', 'ana', 'feed', 'model', m.body.id],
      ['experiment.submitted', 'ana', 'feed', 'experiment', e.body.id],
      ['experiment.cancelled', 'ana', 'feed', 'experiment', e.body.id],
      ['key.created', 'test-admin', null, 'api_key', spare.body.id],
      ['key.revoked', 'test-admin', null, 'api_key', spare.body.id],
    ]);
    const byAna = page.items.filter((x) => x.actorName === 'ana');
    expect(byAna.every((x) => x.actorKeyId === engineerKey.id && x.actorRole === 'engineer')).toBe(true);
    const created = page.items.find((x) => x.action === 'key.created' && x.targetId === engineerKey.id)!;
    expect(created.details).toMatchObject({ name: 'ana', role: 'engineer', lines: ['feed'] });
    expect(JSON.stringify(page.items)).not.toContain(engineerKey.secret);
    expect(page.items.find((x) => x.action === 'feature.updated')!.details).toMatchObject({
      changed: { description: 'click rate, 7 days' },
    });
  });

  it('filters by action, business line, actor (name or key id), since, and pages', async () => {
    expect((await audit('?action=experiment.submitted')).items.map((x) => x.actorName)).toEqual(['ana']);
    const byLine = await audit('?businessLine=feed');
    expect(byLine.total).toBe(8);
    expect((await audit('?actor=ana')).total).toBe(7);
    expect((await audit(`?actor=${engineerKey.id}`)).total).toBe(7);
    expect((await audit(`?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).total).toBe(0);
    const p1 = await audit('?pageSize=2&page=1');
    const p2 = await audit('?pageSize=2&page=2');
    expect(p1.items).toHaveLength(2);
    expect(p2.items).toHaveLength(2);
    expect(p1.items.map((x) => x.at + x.action)).not.toEqual(p2.items.map((x) => x.at + x.action));
    expect(p1.total).toBe(p2.total);
  });

  it('validates the query, naming the field', async () => {
    const r = await admin.call('GET', '/audit?since=yesterday&pageSize=0&action=DROP');
    expect(r.status).toBe(400);
    expect(r.body.issues?.map((i) => i.path).sort()).toEqual(['action', 'pageSize', 'since']);
  });

  it('writes no entry for what did not happen', async () => {
    const before = (await audit()).total;
    const csv = path.join(env.dataDir, 'in', 'small.csv');
    // a conflicting import, a refused write and a spec that fails validation leave no trace
    expect((await engineer.upload('/sample-sets', csv, { name: 'small', businessLine: 'feed', label: 'click' })).status).toBe(
      409,
    );
    expect((await engineer.call('POST', '/business-lines', { name: 'search' })).status).toBe(403);
    expect(
      (await engineer.call('POST', '/experiments', { kind: 'score', businessLine: 'feed', spec: { sampleSet: 'nope' } })).status,
    ).toBe(400);
    expect((await audit()).total).toBe(before);
  });
});
