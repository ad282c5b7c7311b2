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

describe('hardening (real Postgres + Redis)', () => {
  it('sends helmet security headers; the web app at / runs under a strict CSP with no inline script or style', async () => {
    const health = await fetch(`${api.url}/api/v1/health`);
    expect(health.headers.get('x-content-type-options')).toBe('nosniff');
    expect(health.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(health.headers.get('strict-transport-security')).toMatch(/max-age=/);
    expect(health.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    expect(health.headers.get('content-security-policy')).not.toMatch(/upgrade-insecure-requests/);
    expect(health.headers.get('x-powered-by')).toBeNull();

    const page = await fetch(`${api.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("style-src 'self';");
    expect(csp).toContain("script-src-attr 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|sha256-/);
    // every script and style comes from a file of this origin: nothing inline for the CSP to block
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style/);
    expect(html).not.toMatch(/\son[a-z]+=/);
    const script = /<script type="module" crossorigin src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const js = await fetch(`${api.url}${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect(js.headers.get('cache-control')).toMatch(/immutable/);
    // the app keeps the key in localStorage and sends it as a Bearer header
    const code = await js.text();
    expect(code).toContain('abacus.apiKey');
    expect(code).toContain('Bearer ');
  });

  it('answers the web app for its deep links, but never for /api paths or missing files', async () => {
    for (const deep of [
      '/signin',
      '/experiments',
      '/data',
      '/data/0b7ad9a4-3d44-4c1f-9d7c-1a1c5e0e1f00',
      '/experiments/x?page=2',
    ]) {
      const r = await fetch(`${api.url}${deep}`);
      expect(r.status, deep).toBe(200);
      expect(await r.text(), deep).toMatch(/<div id="root"><\/div>/);
    }
    const apiMiss = await fetch(`${api.url}/api/v1/no-such-route`, { headers: { accept: 'text/html' } });
    expect(apiMiss.status).toBe(404);
    expect(apiMiss.headers.get('content-type')).toMatch(/json/);
    const apiRoot = await fetch(`${api.url}/api`, { headers: { accept: 'text/html' } });
    expect(apiRoot.status).toBe(404);
    expect(await apiRoot.text()).not.toMatch(/id="root"/);
    const asset = await fetch(`${api.url}/assets/missing-file.js`);
    expect(asset.status).toBe(404);
    expect(await asset.text()).not.toMatch(/id="root"/);
    const byName = await fetch(`${api.url}/index.html`);
    expect(byName.status).toBe(200);
    expect(byName.headers.get('content-security-policy')).toContain("style-src 'self';");
    const icon = await fetch(`${api.url}/favicon.svg`);
    expect([icon.status, icon.headers.get('content-type')]).toEqual([200, 'image/svg+xml']);
    const posted = await fetch(`${api.url}/data`, { method: 'POST' });
    expect(posted.status).toBe(404);
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
