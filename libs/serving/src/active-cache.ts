import IORedis, { type Redis } from 'ioredis';
import { Logger } from '@nestjs/common';

/** What GET /serving/:id/active answers (plus the line, for the access check). */
export interface ActiveTier {
  servingId: string;
  businessLine: string;
  tier: number;
  modelId: string;
  version: number;
  features: string[];
  artifacts: { safetensors: string; onnx: string };
  since: string;
  pinned: { tier: number; reason: string | null; by: string | null; at: string | null } | null;
  /** the served model's state revision: a later write of an older state is ignored */
  rev: number;
}

/** HSET unless the stored entry has a higher revision (two processes publishing out of order). */
const PUT_IF_NEWER = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local ok, c = pcall(cjson.decode, cur)
  if ok and type(c) == 'table' and tonumber(c.rev) and tonumber(c.rev) > tonumber(ARGV[3]) then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1`;

/**
 * The active tier of every served model, kept in a Redis hash (`<prefix>:serving:active`) and in
 * process memory. A switch writes the hash and publishes the served model's id on
 * `<prefix>:serving:invalidate`; every API process drops its copy and reads the hash again on the
 * next request. Reads never touch Postgres unless both the memory and Redis lack the entry (cold start
 * or a flushed Redis), when `load` rebuilds it.
 */
export class ActiveTierCache {
  private readonly logger = new Logger(ActiveTierCache.name);
  private readonly local = new Map<string, ActiveTier>();
  private readonly redis: Redis;
  private readonly sub: Redis;
  private readonly hashKey: string;
  private readonly channel: string;
  private ready: Promise<unknown>;

  constructor(
    redisUrl: string,
    prefix: string,
    private readonly load: (servingId: string) => Promise<ActiveTier | null>,
  ) {
    this.redis = new IORedis(redisUrl, { maxRetriesPerRequest: 2, lazyConnect: false });
    this.sub = new IORedis(redisUrl, { maxRetriesPerRequest: null });
    this.hashKey = `${prefix}:serving:active`;
    this.channel = `${prefix}:serving:invalidate`;
    this.sub.on('message', (_ch: string, id: string) => this.local.delete(id));
    this.redis.on('error', (e: Error) => this.logger.warn(`redis: ${e.message}`));
    this.sub.on('error', (e: Error) => this.logger.warn(`redis subscriber: ${e.message}`));
    this.ready = this.sub.subscribe(this.channel).catch((e: Error) => this.logger.warn(`subscribe: ${e.message}`));
  }

  async get(servingId: string): Promise<ActiveTier | null> {
    const hit = this.local.get(servingId);
    if (hit) return hit;
    const raw = await this.redis.hget(this.hashKey, servingId);
    if (raw) {
      const v = JSON.parse(raw) as ActiveTier;
      this.local.set(servingId, v);
      return v;
    }
    const loaded = await this.load(servingId);
    if (loaded) await this.put(loaded);
    return loaded;
  }

  /** After a switch (or pin): the new state for every process. */
  async put(v: ActiveTier): Promise<void> {
    const written = await this.redis.eval(PUT_IF_NEWER, 1, this.hashKey, v.servingId, JSON.stringify(v), String(v.rev));
    if (Number(written) === 1) {
      const mine = this.local.get(v.servingId);
      if (!mine || mine.rev <= v.rev) this.local.set(v.servingId, v);
    }
    await this.redis.publish(this.channel, v.servingId);
  }

  async close(): Promise<void> {
    await this.ready;
    this.sub.disconnect();
    this.redis.disconnect();
  }
}
