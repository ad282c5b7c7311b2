import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FeatureEntity } from '@abacus/data';
import { WebhookNotifier } from '@abacus/workflows';
import { FEED_SEARCH_SECRET, feedSearchWorld } from '../support/feed-search-world';

/** add against the simulator's ground truth (the world and services: feedSearchWorld). */
const { ctx, upload, run, role, configOf } = feedSearchWorld();

describe('add on the simulator ground truth', () => {
  const base = () => configOf('feed').filter((f) => !role('noise').includes(f));
  const candidates = ['u_member_level', 'i_hist_ctr', 'u_noise_num', 'c_noise_num'];
  let first: Record<string, any>;

  it('adopts the planted useful candidates, rejects the noise ones, records provenance and notifies the owner', async () => {
    ctx.receiver.received.length = 0;
    first = await run({
      kind: 'add',
      businessLine: 'feed',
      spec: { base: { sampleSet: 'feed-samples', features: base() }, candidates, seed: 4 },
    });
    expect(first.status, first.error ?? '').toBe('succeeded');
    const v = Object.fromEntries(
      first.result.candidates.map((c: { feature: string; verdict: string }) => [c.feature, c.verdict]),
    );
    expect(v).toEqual({ u_member_level: 'adopt', i_hist_ctr: 'adopt', u_noise_num: 'reject', c_noise_num: 'reject' });
    for (const c of first.result.candidates.filter((x: { feature: string }) => x.feature.includes('noise'))) {
      expect(c.contribution.ciLow).toBeLessThanOrEqual(0);
      expect(c.contribution.ciHigh).toBeGreaterThanOrEqual(0);
    }
    expect(first.result.delta.auc.ciLow).toBeGreaterThan(0);
    expect(first.result.delta.split).toBe('test');
    for (const c of first.result.candidates) {
      expect(c.gain.split).toBe('test');
      expect(c.screen.split).toBe('validation');
      // an adopt rests on base + candidate retrained on every seed, paired with the base model's seeds
      if (c.verdict === 'adopt') {
        expect(c.leaveOneIn).toMatchObject({ split: 'validation', seeds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], df: 9 });
        // cross-fitted: seed k judged on its own tenth of the training range, together the whole of it
        expect(c.leaveOneIn.foldRows).toHaveLength(10);
        expect(c.leaveOneIn.ciLow).toBeGreaterThan(0);
        expect(c.leaveOneIn.mean).toBeGreaterThanOrEqual(first.result.minGain);
      }
    }
    const f = await ctx.ds.getRepository(FeatureEntity).findOneByOrFail({ businessLine: 'feed', name: 'u_member_level' });
    expect(f.provenance).toEqual([expect.objectContaining({ businessLine: 'feed', experimentId: first.id, metric: 'auc' })]);
    expect(f.provenance[0].gain).toBeGreaterThan(0);
    expect(ctx.receiver.received).toHaveLength(1);
    const hook = ctx.receiver.received[0];
    const sig = WebhookNotifier.sign(FEED_SEARCH_SECRET, String(hook.headers['x-abacus-timestamp']), hook.body);
    expect(hook.headers['x-abacus-signature']).toBe(sig);
    expect(hook.headers['x-abacus-delivery']).toBe(first.id);
    expect(JSON.parse(hook.body).payload.adopted.sort()).toEqual(['i_hist_ctr', 'u_member_level']);
  });

  it('gives the same verdicts when rerun with the same seed (reusing the cached trainings)', async () => {
    const again = await run({
      kind: 'add',
      businessLine: 'feed',
      spec: { base: { sampleSet: 'feed-samples', features: base() }, candidates, seed: 4 },
    });
    expect(again.result.candidates.map((c: { verdict: string }) => c.verdict)).toEqual(
      first.result.candidates.map((c: { verdict: string }) => c.verdict),
    );
    expect(
      again.trials
        .filter((t: { kind: string }) => t.kind === 'train')
        .every((t: { metrics: { modelCached: boolean } }) => t.metrics.modelCached),
    ).toBe(true);
  });

  it('resolves a candidate that is not a column from the registry: joined from its feature table, point in time', async () => {
    // the same samples without u_member_level: the candidate must come from the users table (by user_id, as of ts)
    const lite = path.join(ctx.env.dataDir, 'feed-lite.parquet');
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    await conn.run(
      `COPY (SELECT * EXCLUDE (u_member_level) FROM read_parquet('${path.join(ctx.env.dataDir, 'world', 'samples', 'feed.parquet')}')) TO '${lite}' (FORMAT parquet)`,
    );
    conn.closeSync();
    db.closeSync();
    await upload('/sample-sets', lite, {
      name: 'feed-lite',
      businessLine: 'feed',
      label: 'click',
      time: 'ts',
      keys: 'impression_id,user_id,item_id,context_id,domain',
    });
    const e = await run({
      kind: 'add',
      businessLine: 'feed',
      spec: { base: { sampleSet: 'feed-lite', features: base() }, candidates: ['u_member_level'], seed: 4 },
    });
    expect(e.status, e.error ?? '').toBe('succeeded');
    const aug = e.trials.find((t: { metrics: { role: string } }) => t.metrics.role === 'augmented');
    const cand = aug.params.recipe.features.find((f: { name: string }) => f.name === 'u_member_level');
    expect(cand.source).toMatchObject({
      kind: 'table',
      entityKey: 'user_id',
      sampleKey: 'user_id',
      timeColumn: 'ts',
      column: 'u_member_level',
    });
    expect(e.result.candidates[0]).toMatchObject({ feature: 'u_member_level', verdict: 'adopt' });
    // the joined feature carries the same signal as the column it replaces (same samples, same seed)
    expect(Math.abs(e.result.candidates[0].contribution.mean - first.result.candidates[0].contribution.mean)).toBeLessThan(0.005);
  });

  it('auto finds features measured positive in another line', async () => {
    const searchBase = configOf('search').filter((f) => !role('noise').includes(f));
    const e = await run({
      kind: 'add',
      businessLine: 'search',
      // what auto resolves is the point here: the fewest seeds the spec allows
      spec: { base: { sampleSet: 'search-samples', features: searchBase }, candidates: 'auto', seed: 4, seeds: 3 },
    });
    expect(e.status, e.error ?? '').toBe('succeeded');
    expect(e.spec.resolved.candidates).toEqual(['u_member_level']);
  });
});
