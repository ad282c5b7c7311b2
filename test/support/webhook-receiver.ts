import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedHook {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * A local HTTP receiver for webhook tests (loopback only). `port`: listen on that port (e.g. to come
 * back up where a stopped receiver was); `received`: share the list with an earlier receiver.
 */
export async function startReceiver(
  opts: { port?: number; received?: ReceivedHook[] } = {},
): Promise<{ url: string; port: number; received: ReceivedHook[]; close(): Promise<void> }> {
  const received: ReceivedHook[] = opts.received ?? [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += String(d)));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(opts.port ?? 0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/abacus`,
    port,
    received,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
