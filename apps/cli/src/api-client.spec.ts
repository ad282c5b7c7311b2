import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient, retryAfterMs } from './api-client';

let server: http.Server | null = null;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = null;
});

/** A server that drops the first `drops` connections under their request, then answers. */
async function flaky(drops: number): Promise<{ url: string; seen: () => number }> {
  let seen = 0;
  server = http.createServer((req, res) => {
    seen += 1;
    if (seen <= drops) {
      req.socket.destroy();
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ok: true, method: req.method }));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen: () => seen };
}

describe('ApiClient on a dropped connection', () => {
  it('sends a GET again once on a new connection', async () => {
    const s = await flaky(1);
    await expect(new ApiClient(s.url).get('/health')).resolves.toEqual({ ok: true, method: 'GET' });
    expect(s.seen()).toBe(2);
  });

  it('gives up on a GET dropped twice, with a clear error', async () => {
    const s = await flaky(2);
    await expect(new ApiClient(s.url).get('/health')).rejects.toThrow(/cannot reach the Abacus API at http:\/\/127\.0\.0\.1:\d+/);
    expect(s.seen()).toBe(2);
  });

  it('never repeats a POST (it may have been carried out)', async () => {
    const s = await flaky(1);
    await expect(new ApiClient(s.url).post('/experiments', { kind: 'score' })).rejects.toThrow(/cannot reach the Abacus API/);
    expect(s.seen()).toBe(1);
  });
});

/** A server that refuses the first `refusals` requests with 429 (Retry-After: `after`), then answers. */
async function limited(refusals: number, after: string | null): Promise<{ url: string; seen: () => number; bodies: string[] }> {
  let seen = 0;
  const bodies: string[] = [];
  server = http.createServer((req, res) => {
    seen += 1;
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      bodies.push(body);
      res.setHeader('content-type', 'application/json');
      if (seen <= refusals) {
        res.statusCode = 429;
        if (after !== null) res.setHeader('retry-after', after);
        res.end(JSON.stringify({ message: 'rate limit exceeded: at most 600 requests per minute per API key' }));
        return;
      }
      res.end(JSON.stringify({ ok: true, method: req.method }));
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen: () => seen, bodies };
}

describe('ApiClient under the rate limit (429)', () => {
  it('waits as the API asks and sends the request again, a POST with its body too', async () => {
    const s = await limited(2, '0');
    const t0 = Date.now();
    await expect(new ApiClient(s.url).post('/experiments', { kind: 'score' })).resolves.toEqual({ ok: true, method: 'POST' });
    expect(s.seen()).toBe(3);
    expect(s.bodies).toEqual(Array(3).fill(JSON.stringify({ kind: 'score' })));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2 * 250 - 20);
  });

  it('gives up after its retries with the API message and a hint', async () => {
    const s = await limited(5, '0');
    await expect(new ApiClient(s.url, {}, 1).get('/experiments')).rejects.toThrow(
      /HTTP 429: rate limit exceeded: at most 600 requests per minute per API key\n  wait a minute and try again/,
    );
    expect(s.seen()).toBe(2);
  });

  it('reads Retry-After as seconds or an HTTP date, else backs off exponentially, capped at a minute', () => {
    expect(retryAfterMs('3', 0)).toBe(3000);
    expect(retryAfterMs('0', 0)).toBe(250);
    expect(retryAfterMs('86400', 0)).toBe(60_000);
    const now = Date.parse('2026-11-26T10:00:00Z');
    expect(retryAfterMs('Thu, 26 Nov 2026 10:00:05 GMT', 0, now)).toBe(5000);
    expect(retryAfterMs(null, 0)).toBe(1000);
    expect(retryAfterMs('soon', 2)).toBe(4000);
    expect(retryAfterMs(null, 10)).toBe(60_000);
  });
});
