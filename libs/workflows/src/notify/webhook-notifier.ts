import { createHmac } from 'node:crypto';
import { Logger } from '@nestjs/common';

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
    private readonly opts: { attempts?: number; timeoutMs?: number } = {},
  ) {}

  static sign(secret: string, timestamp: string, body: string): string {
    return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
  }

  async send(event: string, deliveryId: string, payload: unknown): Promise<Delivery> {
    if (!this.url)
      return { status: 'skipped', url: null, attempts: 0, error: 'no webhook configured (ABACUS_NOTIFY_WEBHOOK_URL)' };
    const body = JSON.stringify({ event, deliveryId, sentAt: new Date().toISOString(), payload });
    const attempts = this.opts.attempts ?? 3;
    let last: Delivery = { status: 'failed', url: this.url, attempts: 0 };
    for (let a = 1; a <= attempts; a++) {
      const timestamp = String(Math.floor(Date.now() / 1000));
      try {
        const res = await fetch(this.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-abacus-event': event,
            'x-abacus-delivery': deliveryId,
            'x-abacus-timestamp': timestamp,
            ...(this.secret ? { 'x-abacus-signature': WebhookNotifier.sign(this.secret, timestamp, body) } : {}),
          },
          body,
          signal: AbortSignal.timeout(this.opts.timeoutMs ?? 5000),
        });
        if (res.ok) return { status: 'delivered', url: this.url, attempts: a, httpStatus: res.status };
        last = { status: 'failed', url: this.url, attempts: a, httpStatus: res.status, error: `HTTP ${res.status}` };
      } catch (err) {
        last = { status: 'failed', url: this.url, attempts: a, error: (err as Error).message };
      }
      if (a < attempts) await new Promise((r) => setTimeout(r, 250 * 2 ** a));
    }
    this.logger.warn(`webhook ${event} ${deliveryId} failed after ${attempts} attempts: ${last.error}`);
    return last;
  }
}
