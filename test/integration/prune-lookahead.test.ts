import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@abacus/configs';
import { simulateWorld, writeWorld, type GroundTruth } from '@abacus/samples';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { startWorker, type WorkerHandle } from '../../apps/worker/src/bootstrap';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { apiClient } from '../support/http';

// The pruning's lookahead fits the retraining checks it may ask for next beside the one asked for,
// the confirm-ahead (on by default on the GPU) the confirm step's whole-model fits while it prunes,
// and spreading hands every check to whichever worker is free (fit.check jobs). They must change
// nothing but when and where the fits run: the same subtract, with and without them, on one world
// (the CPU backend is deterministic for a seed), gives the same checks, verdicts and numbers.

let env: TestEnv;
let api: ApiHandle;
let truth: GroundTruth;

const http = apiClient(
  () => api.url,
  () => env.adminKey,
);

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  const dir = path.join(env.dataDir, 'world');
  const world = simulateWorld({ seed: 11, rows: 60_000 });
  await writeWorld(world, dir);
  truth = world.groundTruth;
  await http.call('POST', '/business-lines', { name: 'feed' });
  const r = await http.upload('/sample-sets', path.join(dir, 'samples', 'feed.parquet'), {
    name: 'feed-samples',
    businessLine: 'feed',
    label: 'click',
    time: 'ts',
    keys: 'impression_id,user_id,item_id,context_id,domain',
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}, 300_000);

afterAll(async () => {
  await api?.close();
  await env?.teardown();
});

/**
 * One subtract on a worker with the given lookahead, confirm-ahead and in-place fine-tunes, every
 * model trained afresh (the model cache emptied first).
 */
async function subtract(
  lookahead: string,
  confirmAhead: string,
  inPlace = 'true',
  spread = { mode: 'auto', workers: 1 },
): Promise<Record<string, any>> {
  fs.rmSync(path.join(env.dataDir, 'models'), { recursive: true, force: true });
  const config = loadConfig(
    {
      ...env.env,
      ABACUS_PRUNE_LOOKAHEAD: lookahead,
      ABACUS_CONFIRM_AHEAD: confirmAhead,
      ABACUS_FINE_TUNE_IN_PLACE: inPlace,
      ABACUS_PRUNE_SPREAD: spread.mode,
    },
    { fresh: true },
  );
  const workers: WorkerHandle[] = [];
  try {
    for (let i = 0; i < spread.workers; i++) workers.push(await startWorker(config, { logger: false }));
    const features = truth.features.filter((f) => f.inConfigOf.includes('feed')).map((f) => f.name);
    const r = await http.call('POST', '/experiments', {
      kind: 'subtract',
      businessLine: 'feed',
      // warm checks with 3 seeds, 3 confirm seeds (each fit here is paid for in time on the CPU)
      spec: {
        model: { sampleSet: 'feed-samples', features },
        maxDrop: 0.001,
        seed: 3,
        retrain: 'warm',
        warmEpochs: 2,
        retrainSeeds: 3,
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const e = await http.finished(String(r.body.id), 600_000, `subtract (lookahead ${lookahead})`);
    expect(e.status, e.error ?? '').toBe('succeeded');
    return e;
  } finally {
    for (const w of workers) await w.stop();
  }
}

describe('subtract with the pruning lookahead, the confirm-ahead, spread checks and fine-tunes from checkpoints', () => {
  it('makes the same checks and verdicts as without them, fits sets ahead, and the confirm reuses the fits made ahead', async () => {
    // plain: the defaults (warm checks in place: lane models restored from the trained model, inputs
    // switched off inside them); ahead: lookahead, confirm-ahead, and each fit loaded from the
    // checkpoint and trained on switched-off copies of the rows
    const plain = await subtract('0', 'auto');
    const ahead = await subtract('1', 'true', 'false');
    // spread: every check a fit.check job, taken by either of two workers (each opens the prune's
    // samples and model itself), with the lookahead's sets beside
    const spread = await subtract('1', 'false', 'true', { mode: 'true', workers: 2 });
    const prune = (e: Record<string, any>) => e.trials.find((t: { kind: string }) => t.kind === 'prune').metrics;
    const confirm = (e: Record<string, any>) =>
      e.trials.find((t: { kind: string; metrics: { role?: string } }) => t.kind === 'train' && t.metrics.role === 'pruned').metrics;

    // the same decisions, check by check, and the same numbers (the checks' AUCs, the confirmation)
    expect(ahead.result.curve).toEqual(plain.result.curve);
    expect(ahead.result.removable).toEqual(plain.result.removable);
    expect(ahead.result.retrainCheck).toEqual(plain.result.retrainCheck);
    expect(ahead.result.confirmed).toEqual(plain.result.confirmed);
    expect(spread.result.curve).toEqual(plain.result.curve);
    expect(spread.result.removable).toEqual(plain.result.removable);
    expect(spread.result.retrainCheck).toEqual(plain.result.retrainCheck);
    expect(spread.result.confirmed).toEqual(plain.result.confirmed);
    expect(plain.result.curve.filter((c: { check: string }) => c.check === 'retrain').length).toBeGreaterThan(1);

    // without (the CPU's defaults): nothing ahead, the confirm trains every fit itself
    expect(prune(plain).lookahead).toBe(0);
    expect(prune(plain).confirmAhead).toBe(false);
    expect(prune(plain).timings).toMatchObject({ lookaheadSets: 0, lookaheadUsed: 0, confirmAheadFits: 0 });
    // in place on the CPU: the warm fits one at a time (whatever ABACUS_HOST_FITS), each on every thread,
    // on one lane model
    expect(prune(plain).retrainMode).toMatchObject({ mode: 'warm', inPlace: true, lanes: 1 });
    expect(prune(plain).spread).toBeNull();
    expect(prune(plain).timings).toMatchObject({ remoteFits: 0, spreadOpenMs: 0 });

    // spread: both workers fitted checks (the prune's own and the other, which opened the prune's
    // state itself), every fit counted once, and the lookahead's sets among them
    const sp = prune(spread);
    expect(sp.spread.workers).toBe(2);
    const byWorker = Object.values(sp.spread.fitsByWorker) as number[];
    expect(byWorker.length).toBe(2);
    expect(byWorker.every((n) => n > 0)).toBe(true);
    expect(byWorker.reduce((a, n) => a + n, 0)).toBe(sp.timings.retrainFits);
    expect(sp.timings.remoteFits).toBeGreaterThan(0);
    expect(sp.timings.remoteFits).toBeLessThan(sp.timings.retrainFits);
    expect(sp.timings.retrainFits).toBe(sp.timings.retrainSets * 3);
    expect(sp.timings.lookaheadSets).toBeGreaterThan(0);
    expect(prune(ahead).retrainMode).toMatchObject({ mode: 'warm', inPlace: false, lanes: 0 });
    expect(confirm(plain).perSeed.every((f: { cached: boolean }) => !f.cached)).toBe(true);

    // with: sets fitted ahead (some asked for later), the whole model on the confirm's first seeds
    const t = prune(ahead).timings;
    expect(prune(ahead).lookahead).toBe(1);
    expect(prune(ahead).confirmAhead).toBe(true);
    expect(t.lookaheadSets).toBeGreaterThan(0);
    expect(t.lookaheadUsed).toBeLessThanOrEqual(t.lookaheadSets);
    expect(t.retrainSets).toBe(prune(plain).timings.retrainSets + t.lookaheadSets - t.lookaheadUsed);
    expect(t.confirmAheadFits).toBe(3);
    expect(prune(ahead).confirmAheadError).toBeUndefined();
    const fits = confirm(ahead).perSeed as { label: string; seed: number; cached: boolean }[];
    expect(fits.filter((f) => f.label === 'full model' && f.seed <= 1003).every((f) => f.cached)).toBe(true);
    expect(fits.filter((f) => f.label === 'model').every((f) => !f.cached)).toBe(true);
  }, 900_000);
});
