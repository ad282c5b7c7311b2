import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from './api-client';

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
