import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource } from '@abacus/data';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { apiClient } from '../support/http';

let env: TestEnv;
let api: ApiHandle;
let ds: DataSource;
const admin = apiClient(
  () => api.url,
  () => env.adminKey,
);

beforeAll(async () => {
  env = await createTestEnv({ ABACUS_RATE_LIMIT_PER_MIN: '5' });
  api = await startApi(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
});

afterAll(async () => {
  await ds?.destroy();
  await api?.close();
  await env?.teardown();
});

const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

describe('hardening (real Postgres + Redis)', () => {
  it('sends helmet security headers; the page at / allows exactly its own inline script and style', async () => {
    const health = await fetch(`${api.url}/api/v1/health`);
    expect(health.headers.get('x-content-type-options')).toBe('nosniff');
    expect(health.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(health.headers.get('strict-transport-security')).toMatch(/max-age=/);
    expect(health.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    expect(health.headers.get('content-security-policy')).not.toMatch(/upgrade-insecure-requests/);
    expect(health.headers.get('x-powered-by')).toBeNull();

    const page = await fetch(`${api.url}/`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const csp = page.headers.get('content-security-policy') ?? '';
    const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]);
    expect(scripts).toHaveLength(1);
    expect(styles).toHaveLength(1);
    // a browser runs an inline script only when its hash is listed: this is what keeps the console clean
    expect(csp).toContain(`script-src 'self' ${sha256(scripts[0])}`);
    expect(csp).toContain(`style-src 'self' ${sha256(styles[0])}`);
    expect(csp).toContain("script-src-attr 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(html).not.toMatch(/\son[a-z]+=/); // no inline event handlers (script-src-attr 'none')
    // the page signs in with a key kept in localStorage and sends it as a Bearer header
    expect(html).toMatch(/<form id="signin"/);
    expect(scripts[0]).toContain('localStorage.setItem(KEY,k)');
    expect(scripts[0]).toContain("authorization:'Bearer '+localStorage.getItem(KEY)");
  });

  it('sends no CORS headers by default, not even to a preflight', async () => {
    const res = await fetch(`${api.url}/api/v1/sample-sets`, {
      headers: { origin: 'https://evil.example.com', authorization: `Bearer ${env.adminKey}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const pre = await fetch(`${api.url}/api/v1/sample-sets`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'GET' },
    });
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('allows exactly the configured CORS origins', async () => {
    const cors = await startApi({ ...env.config, ABACUS_CORS_ORIGINS: ['https://ui.example.com'] }, { port: 0, logger: false });
    try {
      const pre = await fetch(`${cors.url}/api/v1/sample-sets`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://ui.example.com',
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'authorization',
        },
      });
      expect(pre.headers.get('access-control-allow-origin')).toBe('https://ui.example.com');
      expect(pre.headers.get('access-control-allow-headers')).toMatch(/authorization/);
      const other = await fetch(`${cors.url}/api/v1/health`, { headers: { origin: 'https://evil.example.com' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await cors.close();
    }
  });

  it('answers 500 with a generic message and a request id, never a stack or the SQL', async () => {
    await ds.query('ALTER TABLE models RENAME TO models_away');
    try {
      const r = await admin.call('GET', '/models');
      expect(r.status).toBe(500);
      expect(Object.keys(r.body).sort()).toEqual(['error', 'message', 'requestId', 'statusCode']);
      expect(r.body).toMatchObject({ statusCode: 500, message: 'internal error' });
      expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
      expect(JSON.stringify(r.body)).not.toMatch(/models|SELECT|\.ts:|\bat\b/);
    } finally {
      await ds.query('ALTER TABLE models_away RENAME TO models');
    }
  });

  it('answers a malformed JSON body with 400 and no stack', async () => {
    const res = await fetch(`${api.url}/api/v1/business-lines`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${env.adminKey}` },
      body: '{"name": ',
    });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).not.toMatch(/\n\s+at |node_modules|\.js:\d+/);
  });

  // last: it spends this file's rate limit (5 per minute per key)
  it('limits each key to ABACUS_RATE_LIMIT_PER_MIN requests a minute (429), other keys and IPs apart', async () => {
    const viewer = await admin.call('POST', '/keys', { name: 'limited', role: 'viewer', lines: ['*'] });
    expect(viewer.status).toBe(201);
    const as = apiClient(
      () => api.url,
      () => viewer.body.secret as string,
    );
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await as.call('GET', '/business-lines')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    const limited = await as.call('GET', '/business-lines');
    expect(limited.body.message).toMatch(/rate limit exceeded: at most 5 requests per minute per API key/);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // another key has its own budget (the admin key has spent 1 so far)
    expect((await admin.call('GET', '/business-lines')).status).toBe(200);
    // requests without a valid key count against their IP, so guessing keys is limited too
    const anon: number[] = [];
    for (let i = 0; i < 6; i++) anon.push((await fetch(`${api.url}/api/v1/business-lines`)).status);
    expect(anon).toEqual([401, 401, 401, 401, 401, 429]);
    // probes are not limited
    for (let i = 0; i < 6; i++) expect((await fetch(`${api.url}/api/v1/health`)).status).toBe(200);
  });
});
