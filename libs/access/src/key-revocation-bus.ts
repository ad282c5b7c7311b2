import { Logger } from '@nestjs/common';
import IORedis, { type Redis } from 'ioredis';

/**
 * Tells every API process that a key was revoked (Redis pub/sub on `<prefix>:keys:revoked`), so each
 * drops its cache of authenticated keys at once; the cache's lifetime (ABACUS_AUTH_CACHE_MS) only
 * bounds the window while Redis is unreachable.
 */
export class KeyRevocationBus {
  private readonly logger = new Logger(KeyRevocationBus.name);
  private readonly pub: Redis;
  private readonly sub: Redis;
  private readonly channel: string;
  private readonly handlers: (() => void)[] = [];

  constructor(redisUrl: string, prefix: string) {
    this.channel = `${prefix}:keys:revoked`;
    this.pub = new IORedis(redisUrl, { maxRetriesPerRequest: 2 });
    this.sub = new IORedis(redisUrl, { maxRetriesPerRequest: null });
    this.pub.on('error', (e: Error) => this.logger.warn(`redis: ${e.message}`));
    this.sub.on('error', (e: Error) => this.logger.warn(`redis subscriber: ${e.message}`));
    this.sub.on('message', () => this.handlers.forEach((h) => h()));
    this.sub.subscribe(this.channel).catch((e: Error) => this.logger.warn(`subscribe: ${e.message}`));
  }

  onRevoked(fn: () => void): void {
    this.handlers.push(fn);
  }

  async publish(keyId: string): Promise<void> {
    await this.pub.publish(this.channel, keyId);
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.pub.quit(), this.sub.quit()]);
  }
}
