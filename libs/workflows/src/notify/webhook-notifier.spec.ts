import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHostAllowList } from '@abacus/configs';
import { WebhookNotifier } from './webhook-notifier';

let server: http.Server;
let port: number;
const received: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += String(d)));
    req.on('end', () => {
      received.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('WebhookNotifier target checks', () => {
  it('refuses a loopback target that is not allowed, without sending or retrying', async () => {
    const n = received.length;
    const d = await new WebhookNotifier(`http://127.0.0.1:${port}/h`, undefined, { attempts: 3 }).send('e', 'id-1', {});
    expect(d.status).toBe('failed');
    expect(d.attempts).toBe(0);
    expect(d.error).toMatch(/refused: host 127\.0\.0\.1 is a loopback, private or link-local address/);
    expect(received.length).toBe(n);
  });

  it('checks the address a host name resolves to at connect time', async () => {
    // a public-looking name whose address only the lookup reveals: loopback
    const resolve = async () => [{ address: '127.0.0.1', family: 4 }];
    const n = received.length;
    const refused = await new WebhookNotifier(`http://hooks.example.com:${port}/h`, undefined, { attempts: 3, resolve }).send(
      'e',
      'id-2',
      {},
    );
    expect(refused.status).toBe('failed');
    expect(refused.attempts).toBe(1);
    expect(refused.error).toMatch(/webhook target refused: hooks\.example\.com resolves to 127\.0\.0\.1/);
    expect(received.length).toBe(n);
    const other = await new WebhookNotifier(`http://hooks.example.com:${port}/h`, undefined, {
      resolve,
      allow: parseHostAllowList('other.example.com'),
    }).send('e', 'id-2b', {});
    expect(other.status).toBe('failed');
    expect(received.length).toBe(n);
    const allowed = await new WebhookNotifier(`http://hooks.example.com:${port}/h`, undefined, {
      resolve,
      allow: parseHostAllowList('hooks.example.com'),
    }).send('e', 'id-2c', {});
    expect(allowed).toMatchObject({ status: 'delivered', httpStatus: 204 });
    expect(received.length).toBe(n + 1);
  });

  it('delivers to a loopback receiver allowed by address, and by range', async () => {
    for (const allow of ['127.0.0.1', '127.0.0.0/8']) {
      const n = received.length;
      const d = await new WebhookNotifier(`http://127.0.0.1:${port}/h`, 'a-secret-of-16-chars', {
        allow: parseHostAllowList(allow),
      }).send('e', `id-${allow}`, { x: 1 });
      expect(d).toMatchObject({ status: 'delivered', attempts: 1, httpStatus: 204 });
      expect(received.length).toBe(n + 1);
      expect(JSON.parse(received[n])).toMatchObject({ event: 'e', payload: { x: 1 } });
    }
  });

  it('refuses non-http schemes', async () => {
    const d = await new WebhookNotifier('file:///etc/passwd', undefined).send('e', 'id-3', {});
    expect(d).toMatchObject({ status: 'failed', attempts: 0 });
    expect(d.error).toMatch(/http or https/);
  });
});
