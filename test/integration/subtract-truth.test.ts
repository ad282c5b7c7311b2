import { describe, expect, it } from 'vitest';
import { feedSearchWorld } from '../support/feed-search-world';

/** subtract against the simulator's ground truth (the world and services: feedSearchWorld). */
const { ctx, run, role, configOf } = feedSearchWorld();

describe('subtract on the simulator ground truth', () => {
  it('removes the noise, keeps the strong features, and the confirmed model stays within the limit', async () => {
    // the feed line's model: the features in its config
    const features = configOf('feed');
    const e = await run({
      kind: 'subtract',
      businessLine: 'feed',
      // checks retrained from scratch (auto, at these few steps an epoch) on 3 seeds, the confirm on 2 to 3
      spec: { model: { sampleSet: 'feed-samples', features }, maxDrop: 0.001, seed: 3, retrainSeeds: 3, confirmMinSeeds: 2 },
    });
    expect(e.status, e.error ?? '').toBe('succeeded');
    const r = e.result;
    const removable = new Set<string>(r.removable);
    const noise = role('noise').filter((f) => features.includes(f));
    const strong = role('strong').filter((f) => features.includes(f));
    const noiseRemoved = noise.filter((f) => removable.has(f));
    expect(noiseRemoved.length / noise.length, `noise removed: ${noiseRemoved}`).toBeGreaterThanOrEqual(0.9);
    expect(
      strong.filter((f) => removable.has(f)),
      'strong features removed',
    ).toEqual([]);
    expect(removable.size / features.length, `removed ${[...removable]}`).toBeGreaterThanOrEqual(0.4);
    expect(r.confirmed.withinLimit, JSON.stringify(r.confirmed)).toBe(true);
    expect(r.full.auc - r.confirmed.auc).toBeLessThanOrEqual(0.001);
    // redundant copies: of a strong feature and its noisy copy at most one stays, unless both are
    // needed within the limit (a check that removed the copy alone was rejected)
    for (const copy of ctx.truth.features.filter((f) => f.role === 'redundant' && features.includes(f.name))) {
      const kept = [copy.name, copy.copyOf!].filter((f) => !removable.has(f));
      const needed = r.curve.some(
        (c: { added: string[]; accepted: boolean; check: string }) =>
          c.check === 'retrain' && !c.accepted && c.added.length === 1 && c.added[0] === copy.name,
      );
      expect(kept.length <= 1 || needed, `${copy.name} / ${copy.copyOf} both kept`).toBe(true);
    }
    expect(r.curve.length).toBeGreaterThan(0);
    // decisions on the validation split, the confirmation on the test split
    expect(r.splits).toEqual({ decisions: 'validation', reported: 'test' });
    expect(r.estimatedDrop.split).toBe('validation');
    expect(r.confirmed.split).toBe('test');
    // the confirm step: 2 to 3 fresh seeds; it stops before the third only when the validation split
    // decided the paired drop against maxDrop (the rule's interval clear of it), else it fits them all
    const stop = r.confirmed.stoppedWhenDecided;
    expect(r.confirmed.seedsPlanned).toEqual([1001, 1002, 1003]);
    expect(r.confirmed.seeds).toEqual(r.confirmed.seedsPlanned.slice(0, r.confirmed.seeds.length));
    expect(r.confirmed.seeds.length).toBeGreaterThanOrEqual(2);
    expect(stop).toMatchObject({ split: 'validation', minSeeds: 2, maxDrop: 0.001, seeds: r.confirmed.seeds.length });
    expect(stop.ciLow).toBeLessThanOrEqual(stop.drop);
    expect(stop.ciHigh).toBeGreaterThanOrEqual(stop.drop);
    expect(stop.decided).toBe(stop.ciHigh <= 0.001 || stop.ciLow > 0.001);
    if (r.confirmed.seeds.length < 3) expect(stop.decided).toBe(true);
    expect(r.resourcesSaved.storageBytesPerEntity).toBeGreaterThan(0);
    expect(e.trials.map((t: { kind: string }) => t.kind)).toEqual(['train', 'ablate', 'score', 'prune', 'train']);
    // IV runs on the cores a build leaves
    const iv = e.trials.find((t: { kind: string }) => t.kind === 'score').metrics;
    expect(iv.threadsFor).toBe('beside other work');
    expect(iv.timings.buildWaitMs).toBeGreaterThanOrEqual(0);
    // a CPU worker's scoring does not wait for builds (ABACUS_SCORE_BUILD_WAIT_MS applies on GPU workers)
    expect(iv.waitsForBuilds).toBe(false);
    expect(iv.timings.buildWaitMs).toBe(0);
    // five seeds a check (the default) took 136 s to 255 s on two shared cores; three seeds are enough here
  }, 600_000);
});

describe('subtract with warm retraining checks', () => {
  it('fine-tunes copies of the trained model instead of retraining, and still keeps the strong features and drops the noise', async () => {
    const features = configOf('feed');
    // the feed line's ~77k fitted rows are 75 steps an epoch: auto would retrain from scratch, so warm is
    // asked for, with 3 epochs (225 steps) to give the fine-tune room
    const e = await run({
      kind: 'subtract',
      businessLine: 'feed',
      spec: { model: { sampleSet: 'feed-samples', features }, maxDrop: 0.001, seed: 3, retrain: 'warm', warmEpochs: 3 },
    });
    expect(e.status, e.error ?? '').toBe('succeeded');
    const r = e.result;
    const removable = new Set<string>(r.removable);
    const noise = role('noise').filter((f) => features.includes(f));
    const strong = role('strong').filter((f) => features.includes(f));
    expect(
      strong.filter((f) => removable.has(f)),
      'strong features removed',
    ).toEqual([]);
    const noiseRemoved = noise.filter((f) => removable.has(f));
    expect(noiseRemoved.length / noise.length, `noise removed: ${noiseRemoved}`).toBeGreaterThanOrEqual(0.75);
    expect(r.confirmed.withinLimit, JSON.stringify(r.confirmed)).toBe(true);
    const prune = e.trials.find((t: { kind: string }) => t.kind === 'prune');
    // warm checks ran: three seeds, no model trained from scratch, no samples built for a subset
    expect(prune.metrics.retrainMode).toMatchObject({ mode: 'warm', asked: 'warm', warmEpochs: 3, seeds: [1, 2, 3] });
    expect(r.retrainCheck.mode).toBe('warm');
    expect(prune.metrics.timings.retrainFits).toBeGreaterThan(0);
    expect(prune.metrics.timings.warmTrainMs).toBeGreaterThan(0);
    expect(prune.metrics.timings.retrainBuildMs).toBe(0);
    expect(r.curve.some((c: { check: string }) => c.check === 'retrain')).toBe(true);
  }, 600_000);
});
