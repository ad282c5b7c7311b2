import { createHmac } from 'node:crypto';
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Logger } from '@nestjs/common';
import { addressAllowed, webhookUrlProblem, type HostAllowList } from '@abacus/configs';

export interface Delivery {
  status: 'delivered' | 'failed' | 'skipped';
  url: string | null;
  attempts: number;
  httpStatus?: number;
  error?: string;
}

/**
 * Signed JSON webhooks to owners. The body is signed with HMAC-SHA256 over `${timestamp}.${body}`
 * (header x-abacus-signature: sha256=<hex>, x-abacus-timestamp); x-abacus-delivery is stable per
 * event so a receiver can drop the duplicate a retried trial may send.
 */
export class WebhookNotifier {
  private readonly logger = new Logger(WebhookNotifier.name);

  constructor(
    private readonly url: string | undefined,
    private readonly secret: string | undefined,
    private readonly opts: {
      attempts?: number;
      timeoutMs?: number;
      allow?: HostAllowList;
      /** every address of a host name (default: the system resolver) */
      resolve?: (hostname: string) => Promise<dns.LookupAddress[]>;
    } = {},
  ) {}

  private get allow(): HostAllowList {
    return this.opts.allow ?? { hosts: [], ranges: [] };
  }

  /**
   * DNS lookup that refuses addresses outside the allow-list. It runs at connect time, so the address
   * checked is the address connected to (a name cannot resolve to a public address for the check and a
   * private one for the request).
   */
  private readonly checkedLookup: LookupFunction = (hostname, options, callback) => {
    const resolve =
      this.opts.resolve ?? ((h: string) => dns.promises.lookup(h, { all: true, family: options.family, hints: options.hints }));
    resolve(hostname).then(
      (addresses) => {
        const refused = addresses.find((a) => !addressAllowed(hostname, a.address, this.allow));
        if (refused || !addresses.length) {
          const reason = refused
            ? `${hostname} resolves to ${refused.address}, which is not a public address or not in ABACUS_WEBHOOK_ALLOWED_HOSTS`
            : `${hostname} has no address`;
          return callback(Object.assign(new Error(`webhook target refused: ${reason}`), { code: 'EWEBHOOKTARGET' }), '', 0);
        }
        if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
        callback(null, addresses[0].address, addresses[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };

  /** One POST through node:http(s) with the checked lookup; resolves with the status code. */
  private post(url: URL, headers: Record<string, string>, body: string): Promise<number> {
    const mod = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.request(
        url,
        {
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          lookup: this.checkedLookup,
          timeout: this.opts.timeoutMs ?? 5000,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.opts.timeoutMs ?? 5000} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  static sign(secret: string, timestamp: string, body: string): string {
    return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
  }

  async send(event: string, deliveryId: string, payload: unknown): Promise<Delivery> {
    if (!this.url)
      return { status: 'skipped', url: null, attempts: 0, error: 'no webhook configured (ABACUS_NOTIFY_WEBHOOK_URL)' };
    // checked again at use: the URL (scheme, literal address) here, every resolved address in the lookup
    const problem = webhookUrlProblem(this.url, this.allow);
    if (problem) {
      this.logger.warn(`webhook ${event} ${deliveryId} not sent: ${problem}`);
      return { status: 'failed', url: this.url, attempts: 0, error: `webhook target refused: ${problem}` };
    }
    const target = new URL(this.url);
    const body = JSON.stringify({ event, deliveryId, sentAt: new Date().toISOString(), payload });
    const attempts = this.opts.attempts ?? 3;
    let last: Delivery = { status: 'failed', url: this.url, attempts: 0 };
    for (let a = 1; a <= attempts; a++) {
      const timestamp = String(Math.floor(Date.now() / 1000));
      try {
        const status = await this.post(
          target,
          {
            'content-type': 'application/json',
            'x-abacus-event': event,
            'x-abacus-delivery': deliveryId,
            'x-abacus-timestamp': timestamp,
            ...(this.secret ? { 'x-abacus-signature': WebhookNotifier.sign(this.secret, timestamp, body) } : {}),
          },
          body,
        );
        if (status >= 200 && status < 300) return { status: 'delivered', url: this.url, attempts: a, httpStatus: status };
        last = { status: 'failed', url: this.url, attempts: a, httpStatus: status, error: `HTTP ${status}` };
      } catch (err) {
        last = { status: 'failed', url: this.url, attempts: a, error: (err as Error).message };
        // a refused target stays refused: no retries
        if ((err as { code?: string }).code === 'EWEBHOOKTARGET') break;
      }
      if (a < attempts) await new Promise((r) => setTimeout(r, 250 * 2 ** a));
    }
    this.logger.warn(`webhook ${event} ${deliveryId} failed after ${last.attempts} attempt(s): ${last.error}`);
    return last;
  }
}
