import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource, FeatureEntity } from '@abacus/data';
import { simulateWorld, writeWorld, type GroundTruth } from '@abacus/samples';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { createTestEnv, type TestEnv } from './test-env';
import { startReceiver } from './webhook-receiver';
import { apiClient } from './http';

export const FEED_SEARCH_SECRET = 'test-secret-0123456789';

/**
 * The simulated world of the add and subtract ground-truth tests (seed 5, 400,000 impressions): feed
 * and search with their sample sets, the world's feature tables under feed with the planted costs, an
 * api and a worker, and a webhook receiver for add's notifications. Registers the file's beforeAll
 * and afterAll; each test file gets its own database, data directory and world.
 */
export function feedSearchWorld() {
  const ctx = {} as {
    env: TestEnv;
    api: ApiHandle;
    worker: WorkerHandle;
    ds: DataSource;
    truth: GroundTruth;
    receiver: Awaited<ReturnType<typeof startReceiver>>;
  };
  const http = apiClient(
    () => ctx.api.url,
    () => ctx.env.adminKey,
  );
  const call = http.call;
  async function upload(route: string, file: string, fields: Record<string, string>) {
    const r = await http.upload(route, file, fields);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body;
  }
  async function run(body: unknown): Promise<Record<string, any>> {
    const r = await call('POST', '/experiments', body);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return http.finished(String(r.body.id), 600_000, `${(body as { kind: string }).kind} experiment`);
  }
  const role = (r: string) => ctx.truth.features.filter((f) => f.role === r).map((f) => f.name);
  const configOf = (line: string) => ctx.truth.features.filter((f) => f.inConfigOf.includes(line)).map((f) => f.name);

  beforeAll(async () => {
    ctx.receiver = await startReceiver();
    // the receiver listens on loopback, which webhooks may only reach when allowed explicitly
    ctx.env = await createTestEnv({
      ABACUS_NOTIFY_WEBHOOK_URL: ctx.receiver.url,
      ABACUS_NOTIFY_WEBHOOK_SECRET: FEED_SEARCH_SECRET,
      ABACUS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    });
    ctx.api = await startApi(ctx.env.config, { logger: false });
    ctx.worker = await startWorker(ctx.env.config, { logger: false });
    ctx.ds = createDataSource(ctx.env.config);
    await ctx.ds.initialize();
    const dir = path.join(ctx.env.dataDir, 'world');
    const world = simulateWorld({ seed: 5, rows: 400_000 });
    await writeWorld(world, dir);
    ctx.truth = world.groundTruth;
    for (const line of ['feed', 'search']) {
      await call('POST', '/business-lines', { name: line });
      await upload('/sample-sets', path.join(dir, 'samples', `${line}.parquet`), {
        name: `${line}-samples`,
        businessLine: line,
        label: 'click',
        time: 'ts',
        keys: 'impression_id,user_id,item_id,context_id,domain',
      });
    }
    // the registry (for costs and provenance): the world's feature tables under feed
    for (const [table, key, time] of [
      ['users', 'user_id', 'ts'],
      ['items', 'item_id', ''],
      ['contexts', 'context_id', ''],
    ]) {
      await upload('/feature-tables', path.join(dir, `${table}.parquet`), {
        name: table,
        businessLine: 'feed',
        entityKey: key,
        ...(time ? { time } : {}),
      });
    }
    for (const f of await ctx.ds.getRepository(FeatureEntity).find()) {
      const t = ctx.truth.features.find((x) => x.name === f.name);
      if (t) await call('PATCH', `/features/${f.id}`, { costs: t.costs });
    }
  }, 600_000);

  afterAll(async () => {
    await ctx.worker?.stop();
    await ctx.api?.close();
    await ctx.ds?.destroy();
    await ctx.receiver?.close();
    await ctx.env?.teardown();
  });

  return { ctx, http, call, upload, run, role, configOf };
}
