import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource } from '@abacus/data';
import { MIGRATIONS } from '../../migrations';
import { AccessControl1795300200000 } from '../../migrations/1795300200000-AccessControl';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { listDir, writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';

let env: TestEnv;
let api: ApiHandle;
let ds: DataSource;

const { call, upload } = apiClient(
  () => api.url,
  () => env.adminKey,
);

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
  await call('POST', '/business-lines', { name: 'feed' });
});

afterAll(async () => {
  await ds?.destroy();
  await api?.close();
  await env?.teardown();
});

describe('feature registry, feature tables and models (real Postgres)', () => {
  it('imports an entity-keyed feature table and registers its columns as features, in one step', async () => {
    const file = path.join(env.dataDir, 'in', 'users.csv');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, 'user_id,age,city\n1,31,bj\n2,45,sh\n3,22,bj\n');
    const r = await upload('/feature-tables', file, { name: 'users', businessLine: 'feed', entityKey: 'user_id' });
    expect(r.status).toBe(201);
    const features = r.body.features as { name: string; kind: string; sourceTable: string; entityKey: string }[];
    expect(features.map((f) => [f.name, f.kind, f.sourceTable, f.entityKey]).sort()).toEqual([
      ['age', 'numeric', 'users', 'user_id'],
      ['city', 'categorical', 'users', 'user_id'],
    ]);
    // a second table whose column collides with a registered feature is refused whole
    const r2 = await upload('/feature-tables', file, { name: 'users2', businessLine: 'feed', entityKey: 'user_id' });
    expect(r2.status).toBe(409);
    const bad = await upload('/feature-tables', file, { name: 'users3', businessLine: 'feed', entityKey: 'uid' });
    expect(bad.status).toBe(400);
    expect(bad.body.issues?.[0].path).toBe('entityKey');
    expect(Number((await ds.query('SELECT count(*)::int AS n FROM feature_tables'))[0].n)).toBe(1);
    expect(listDir(path.join(env.dataDir, 'feature-tables')).filter((f) => f.endsWith('.parquet'))).toHaveLength(1);
    const list = await call('GET', '/features?businessLine=feed&kind=numeric');
    expect((list.body.items as { name: string }[]).map((f) => f.name)).toEqual(['age']);
  });

  it('registers a single feature with costs and transform, validating each field', async () => {
    const ok = await call('POST', '/features', {
      name: 'ctr_7d',
      businessLine: 'feed',
      kind: 'numeric',
      transform: { type: 'log' },
      costs: { storageBytesPerEntity: 4, fetchBytesPerRequest: 4, computeCost: 1 },
    });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ owner: 'test-admin', costs: { storageBytesPerEntity: 4, source: 'declared' } });
    const bad = await call('POST', '/features', { name: 'x', businessLine: 'feed', kind: 'vector', transform: { type: 'hash' } });
    expect(bad.status).toBe(400);
    expect(bad.body.issues?.map((i) => i.path).sort()).toEqual(['kind', 'transform.hashBuckets']);
  });

  it('creates models with default features and a new version per registration', async () => {
    const csv = path.join(env.dataDir, 'in', 'small.csv');
    writeSmallCsv(csv, 200);
    const ss = await upload('/sample-sets', csv, { name: 'small', businessLine: 'feed', label: 'click', time: 'ts' });
    expect(ss.status).toBe(201);
    const m1 = await call('POST', '/models', { name: 'base', businessLine: 'feed', sampleSetId: ss.body.id });
    expect(m1.status).toBe(201);
    expect(m1.body).toMatchObject({ version: 1, features: ['strong', 'weak', 'noise', 'color'] });
    const m2 = await call('POST', '/models', {
      name: 'base',
      businessLine: 'feed',
      sampleSetId: ss.body.id,
      features: ['strong'],
    });
    expect(m2.body).toMatchObject({ version: 2, features: ['strong'] });
    const bad = await call('POST', '/models', {
      name: 'base',
      businessLine: 'feed',
      sampleSetId: ss.body.id,
      features: ['click'],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.issues?.[0].path).toBe('features.0');
  });
});

describe('migrations', () => {
  it('go down and up again', async () => {
    const tables = async () =>
      (
        await ds.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'migrations' ORDER BY 1`)
      ).map((r: { tablename: string }) => r.tablename);
    const before = await tables();
    expect(before).toEqual([
      'api_keys',
      'audit_log',
      'business_lines',
      'experiments',
      'feature_results',
      'feature_tables',
      'features',
      'models',
      'report_deliveries',
      'report_schedules',
      'reports',
      'sample_sets',
      'serving_models',
      'serving_switches',
      'serving_webhook_deliveries',
      'shared_embeddings',
      'trials',
    ]);
    await api.close();
    // newest first; the access-control migration takes the keys table with it
    for (let i = MIGRATIONS.length - 1; i >= 0; i--) {
      await ds.undoLastMigration({ transaction: 'each' });
      if (MIGRATIONS[i] === AccessControl1795300200000) expect(await tables()).not.toContain('api_keys');
    }
    expect(await tables()).toEqual([]);
    await ds.runMigrations({ transaction: 'each' });
    expect(await tables()).toEqual(before);
    api = await startApi(env.config, { logger: false });
    // the keys went with their table: the old admin key is unknown now
    expect((await call('GET', '/business-lines')).status).toBe(401);
  });
});
