import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { renderBankEntry, type BankEntry } from '../../apps/cli/src/commands/bank.command';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { writeSmallCsv } from '../support/fixtures';
import { apiClient } from '../support/http';

let env: TestEnv;
let api: ApiHandle;
let mallKey = '';

const admin = apiClient(
  () => api.url,
  () => env.adminKey,
);
const mall = apiClient(
  () => api.url,
  () => mallKey,
);

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  for (const name of ['feed', 'search', 'mall', 'ads']) await admin.call('POST', '/business-lines', { name });
  const file = path.join(env.dataDir, 'in', 'small.csv');
  writeSmallCsv(file, 300);
  const imports: Record<string, string>[] = [
    { name: 'feed-clicks', businessLine: 'feed', shareWith: 'mall' },
    { name: 'search-orders', businessLine: 'search', shareWith: '*', labelSemantics: 'click->order' },
    { name: 'ads-private', businessLine: 'ads' },
    { name: 'mall-clicks', businessLine: 'mall' },
  ];
  for (const f of imports) {
    const r = await admin.upload('/sample-sets', file, { label: 'click', time: 'ts', ...f });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  }
  const k = await admin.call('POST', '/keys', { name: 'mall-viewer', role: 'viewer', lines: ['mall'] });
  expect(k.status).toBe(201);
  mallKey = k.body.secret as string;
});

afterAll(async () => {
  await api?.close();
  await env?.teardown();
});

const names = (r: { body: Record<string, any> }) => (r.body.items as { name: string }[]).map((s) => s.name).sort();

describe('DataBank metadata and search', () => {
  it('stores label semantics (default exposure->click) and a content version at import', async () => {
    const all = await admin.call('GET', '/sample-sets?pageSize=500');
    const byName = new Map((all.body.items as BankEntry[]).map((s) => [s.name, s]));
    expect(byName.get('feed-clicks')!.labelSemantics).toBe('exposure->click');
    expect(byName.get('search-orders')!.labelSemantics).toBe('click->order');
    // the same file gives the same version
    const v = byName.get('feed-clicks')!.dataVersion;
    expect(v).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(byName.get('mall-clicks')!.dataVersion).toBe(v);
  });

  it('refuses a malformed label semantics naming the field', async () => {
    const file = path.join(env.dataDir, 'in', 'small.csv');
    const r = await admin.upload('/sample-sets', file, {
      name: 'bad',
      businessLine: 'feed',
      label: 'click',
      labelSemantics: 'Exposure click',
    });
    expect(r.status).toBe(400);
    expect(r.body.issues?.[0].path).toBe('labelSemantics');
  });

  it('filters by line, label semantics and columns, within what the caller may read', async () => {
    expect(names(await admin.call('GET', '/sample-sets?labelSemantics=exposure->click'))).toEqual([
      'ads-private',
      'feed-clicks',
      'mall-clicks',
    ]);
    expect(names(await admin.call('GET', '/sample-sets?hasColumns=strong,color&businessLine=search'))).toEqual(['search-orders']);
    expect(names(await admin.call('GET', '/sample-sets?hasColumns=strong,absent'))).toEqual([]);
    // a mall key sees its own line and what feed and search share with it, never ads' private set
    expect(names(await mall.call('GET', '/sample-sets'))).toEqual(['feed-clicks', 'mall-clicks', 'search-orders']);
    expect(names(await mall.call('GET', '/sample-sets?labelSemantics=exposure->click&hasColumns=color'))).toEqual([
      'feed-clicks',
      'mall-clicks',
    ]);
    const bad = await admin.call('GET', '/sample-sets?labelSemantics=clicks');
    expect(bad.status).toBe(400);
    expect(bad.body.issues?.[0].path).toBe('labelSemantics');
  });

  it('bank show renders columns, label stats, time range, sharing, owner and version', async () => {
    const all = await mall.call('GET', '/sample-sets?businessLine=feed');
    const text = renderBankEntry(all.body.items[0] as BankEntry);
    expect(text).toContain('feed/feed-clicks');
    expect(text).toContain('label: click (exposure->click)');
    expect(text).toContain('time: ts from 1000 to 1299');
    expect(text).toContain('shared with: mall');
    expect(text).toMatch(/data version: sha256:[0-9a-f]{16}/);
    expect(text).toMatch(/color\s+categorical/);
  });
});
