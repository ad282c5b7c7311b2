import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { createTestEnv, waitUntil, type TestEnv } from '../support/test-env';
import { apiClient } from '../support/http';

// two API processes on one database and Redis, each trusting checked keys for a minute
let env: TestEnv;
let a: ApiHandle;
let b: ApiHandle;

beforeAll(async () => {
  env = await createTestEnv({ ABACUS_AUTH_CACHE_MS: '60000' });
  a = await startApi(env.config, { logger: false });
  b = await startApi({ ...env.config, ABACUS_API_PORT: 0 }, { logger: false });
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await env?.teardown();
});

describe('cached API keys across API processes', () => {
  it('a key revoked through one process stops working on the other at once, not after the cache lifetime', async () => {
    const admin = apiClient(
      () => a.url,
      () => env.adminKey,
    );
    const created = await admin.call('POST', '/keys', { name: 'cached-viewer', role: 'viewer', lines: ['*'] });
    expect(created.status).toBe(201);
    const onB = apiClient(
      () => b.url,
      () => created.body.secret as string,
    );
    // B checks the key once and then trusts it from memory
    expect((await onB.call('GET', '/keys/me')).status).toBe(200);
    expect((await onB.call('GET', '/keys/me')).status).toBe(200);
    expect((await admin.call('POST', `/keys/${created.body.id}/revoke`)).status).toBe(200);
    const t0 = Date.now();
    const refused = await waitUntil(
      async () => {
        const r = await onB.call('GET', '/keys/me');
        return r.status === 401 ? r : null;
      },
      5_000,
      'the other process to refuse the revoked key',
    );
    expect(refused.body.message).toMatch(/revoked/);
    // far inside the 60 s the cache would otherwise trust it
    expect(Date.now() - t0).toBeLessThan(5_000);
  });
});
