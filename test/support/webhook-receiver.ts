import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedHook {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A local HTTP receiver for webhook tests (loopback only). */
export async function startReceiver(): Promise<{ url: string; received: ReceivedHook[]; close(): Promise<void> }> {
  const received: ReceivedHook[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += String(d)));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hooks/abacus`, received, close: () => new Promise((r) => server.close(() => r())) };
}
