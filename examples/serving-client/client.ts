import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small client of Abacus serving tiers: registers a served model, receives the switch webhooks
 * on a local HTTP server (signature and timestamp checked), reports load signals, and swaps the
 * model it serves (the tier's features and artifact references). Only Node built-ins, so it can be
 * copied into a serving process as it is. Predictions are not made here: `onSwitch` is where a
 * real server loads the artifact.
 */

export type Signals = Partial<Record<'cpu' | 'gpu' | 'p99LatencyMs' | 'errorRate' | 'qps', number>>;

/** What GET /api/v1/serving/:id/active answers. */
export interface ActiveTier {
  tier: number;
  modelId: string;
  version: number;
  features: string[];
  artifacts: { safetensors: string; onnx: string };
  since: string;
  pinned: { tier: number; reason: string | null; by: string | null; at: string | null } | null;
}

/** The model this client serves: the active tier with absolute artifact URLs. */
export interface ServedModel extends ActiveTier {
  artifactUrls: { safetensors: string; onnx: string };
}

export interface ServingClientOptions {
  /** e.g. http://127.0.0.1:3000 */
  apiUrl: string;
  apiKey: string;
  /** the webhook secret given at registration (HMAC-SHA256 key) */
  secret: string;
  /** where the webhook server listens (default 127.0.0.1, any free port) */
  listenHost?: string;
  listenPort?: number;
  /** the URL Abacus should call, when it differs from the listening address (a proxy, a public name) */
  publicUrl?: string;
  /** webhooks older or newer than this are refused (replays) */
  toleranceSeconds?: number;
}

export type SwitchHandler = (next: ServedModel, previous: ServedModel | null) => void | Promise<void>;

/** `sha256=HMAC(secret, "<timestamp>.<body>")` compared in constant time. */
export function verifySignature(secret: string, timestamp: string, body: string, signature: string): boolean {
  const want = Buffer.from(`sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`);
  const got = Buffer.from(signature);
  return got.length === want.length && timingSafeEqual(got, want);
}

export class ServingClient {
  private server: http.Server | null = null;
  private servingId: string | null = null;
  private current: ServedModel | null = null;
  private readonly handlers: SwitchHandler[] = [];
  private readonly seen = new Set<string>();
  private chain: Promise<void> = Promise.resolve();
  /** webhooks refused (bad signature, stale timestamp): for monitoring */
  rejected = 0;

  constructor(private readonly opts: ServingClientOptions) {}

  /** Called after every swap (also the first load), in order. */
  onSwitch(fn: SwitchHandler): void {
    this.handlers.push(fn);
  }

  currentTier(): number | null {
    return this.current?.tier ?? null;
  }

  currentModel(): ServedModel | null {
    return this.current;
  }

  get id(): string | null {
    return this.servingId;
  }

  private async api<T>(method: string, route: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.opts.apiUrl}/api/v1${route}`, {
      method,
      headers: {
        authorization: `Bearer ${this.opts.apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${route}: HTTP ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }

  /** Starts the webhook server; resolves with the URL to register. */
  async listen(): Promise<string> {
    const server = http.createServer((req, res) => this.receive(req, res));
    await new Promise<void>((r) => server.listen(this.opts.listenPort ?? 0, this.opts.listenHost ?? '127.0.0.1', r));
    this.server = server;
    const { port } = server.address() as AddressInfo;
    return this.opts.publicUrl ?? `http://${this.opts.listenHost ?? '127.0.0.1'}:${port}/hooks/abacus`;
  }

  /** Registers the served model (webhook = this client's server) and loads its active tier. */
  async register(input: { model: string; businessLine: string; tiers: number[]; policy?: unknown }): Promise<string> {
    const webhookUrl = await this.listen();
    const s = await this.api<{ id: string }>('POST', '/serving', { ...input, webhookUrl, secret: this.opts.secret });
    this.servingId = s.id;
    await this.refresh();
    return s.id;
  }

  /** Follows a served model registered elsewhere (its webhook must point at this client). */
  async attach(servingId: string): Promise<void> {
    if (!this.server) await this.listen();
    this.servingId = servingId;
    await this.refresh();
  }

  async reportSignals(
    signals: Signals & { at?: string },
  ): Promise<{ tier: number; decision: { action: string; reason: string } }> {
    if (!this.servingId) throw new Error('not registered');
    return this.api('POST', `/serving/${this.servingId}/signals`, signals);
  }

  /** Reads the active tier and swaps to it if it changed (webhooks call this too: the API's answer is authoritative). */
  refresh(): Promise<void> {
    // one refresh at a time, so swaps happen in order
    this.chain = this.chain.then(async () => {
      if (!this.servingId) return;
      const a = await this.api<ActiveTier>('GET', `/serving/${this.servingId}/active`);
      const prev = this.current;
      if (prev && prev.tier === a.tier && prev.modelId === a.modelId && JSON.stringify(prev.pinned) === JSON.stringify(a.pinned))
        return;
      const next: ServedModel = {
        ...a,
        artifactUrls: {
          safetensors: `${this.opts.apiUrl}${a.artifacts.safetensors}`,
          onnx: `${this.opts.apiUrl}${a.artifacts.onnx}`,
        },
      };
      this.current = next;
      if (prev && prev.modelId === next.modelId) return;
      for (const h of this.handlers) await h(next, prev);
    });
    return this.chain;
  }

  private receive(req: http.IncomingMessage, res: http.ServerResponse): void {
    let body = '';
    req.on('data', (d) => {
      body += String(d);
      if (body.length > 1_000_000) req.destroy();
    });
    req.on('end', () => {
      const ts = String(req.headers['x-abacus-timestamp'] ?? '');
      const sig = String(req.headers['x-abacus-signature'] ?? '');
      const age = Math.abs(Date.now() / 1000 - Number(ts));
      if (
        req.method !== 'POST' ||
        !verifySignature(this.opts.secret, ts, body, sig) ||
        !(age <= (this.opts.toleranceSeconds ?? 300))
      ) {
        this.rejected++;
        res.writeHead(401).end();
        return;
      }
      const delivery = String(req.headers['x-abacus-delivery'] ?? '');
      // answered at once; a retried delivery is acknowledged but not applied twice
      res.writeHead(204).end();
      if (this.seen.has(delivery)) return;
      this.seen.add(delivery);
      this.refresh().catch((err: unknown) =>
        console.error(`serving client: refresh after webhook failed: ${(err as Error).message}`),
      );
    });
  }

  async close(): Promise<void> {
    await this.chain.catch(() => undefined);
    const s = this.server;
    this.server = null;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}
