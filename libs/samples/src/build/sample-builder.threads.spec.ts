import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FEATURE_CATALOG } from '../simulator/feature-catalog';
import { simulateWorld } from '../simulator/simulator.service';
import { writeWorld } from '../simulator/world-writer';
import type { BuiltSamples, SampleBuildRequest } from './sample-build.types';
import { SampleBuildError } from './sample-build.error';
import { buildSamples } from './sample-builder';
import { bundleThreadScript } from '../../../../test/support/thread-bundle';

const TABLE = {
  user: { file: 'users.parquet', key: 'user_id', time: 'ts' },
  item: { file: 'items.parquet', key: 'item_id', time: null },
  context: { file: 'contexts.parquet', key: 'context_id', time: null },
} as const;

let dir = '';
let script = '';
let request: SampleBuildRequest;

beforeAll(async () => {
  ({ dir, script } = await bundleThreadScript(path.join(__dirname, 'build-thread.ts')));
  const world = simulateWorld({ seed: 11, rows: 20_000 });
  await writeWorld(world, dir);
  // every catalog feature (numeric, categorical, multi-id), joined from the raw tables (users point-in-time)
  request = {
    samples: { file: path.join(dir, 'impressions.parquet'), label: 'click', time: 'ts', groupKey: 'impression_id' },
    features: FEATURE_CATALOG.map((spec) => {
      const t = TABLE[spec.table];
      return {
        name: spec.name,
        kind: spec.kind,
        source: { kind: 'table', file: path.join(dir, t.file), entityKey: t.key, sampleKey: t.key, timeColumn: t.time },
      };
    }),
    split: { testFrom: world.groundTruth.testFrom },
    filter: { column: 'domain', values: ['search'] },
  };
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sameBuild = (a: BuiltSamples, b: BuiltSamples) => {
  const { timings: ta, ...restA } = a;
  const { timings: tb, ...restB } = b;
  expect(restA).toEqual(restB);
  expect(ta.encodeMs).toBeGreaterThan(0);
  expect(tb.encodeMs).toBeGreaterThan(0);
};

describe('buildSamples on worker threads', () => {
  it('builds exactly what one thread builds, the features dealt among the threads', async () => {
    const one = await buildSamples(request, { threads: 1 });
    const progress: number[] = [];
    const three = await buildSamples(request, { threads: 3, threadScript: script, onProgress: (f) => progress.push(f) });
    sameBuild(three, one);
    expect(three.timings.threads).toBe(3);
    expect(one.timings.threads).toBeUndefined();
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.every((f, i) => i === 0 || f >= progress[i - 1])).toBe(true);
    expect(progress.at(-1)).toBe(1);
    // more threads than features: one feature each; a random split (no time column) as well
    const few = { ...request, features: request.features.slice(0, 3) };
    sameBuild(await buildSamples(few, { threads: 8, threadScript: script }), await buildSamples(few));
    const random: SampleBuildRequest = {
      ...request,
      samples: { ...request.samples, time: undefined },
      features: request.features.filter((f) => f.source.kind === 'table' && !f.source.timeColumn),
      split: { testFraction: 0.25, seed: 3 },
    };
    sameBuild(await buildSamples(random, { threads: 2, threadScript: script }), await buildSamples(random));
    // no thread script (running from the sources): the calling thread
    expect((await buildSamples(few, { threads: 4, threadScript: null })).timings.threads).toBeUndefined();
  }, 180_000);

  it("names the request's own field when a thread fails, and the memory limit as one thread does", async () => {
    const bad = structuredClone(request);
    const k = 5;
    const src = bad.features[k].source;
    if (src.kind !== 'table') throw new Error('the catalog feature reads a table');
    src.entityKey = 'nope';
    const one = await buildSamples(bad).catch((e: unknown) => e);
    const three = await buildSamples(bad, { threads: 3, threadScript: script }).catch((e: unknown) => e);
    expect(one).toBeInstanceOf(SampleBuildError);
    expect(three).toBeInstanceOf(SampleBuildError);
    expect((three as SampleBuildError).field).toBe(`features.${k}.source.entityKey`);
    expect((three as SampleBuildError).message).toBe((one as SampleBuildError).message);
    const limit = { memoryLimitBytes: 1024 };
    const oneLimit = await buildSamples(request, limit).catch((e: unknown) => e);
    const threeLimit = await buildSamples(request, { ...limit, threads: 3, threadScript: script }).catch((e: unknown) => e);
    expect((threeLimit as SampleBuildError).field).toBe('samples');
    expect((threeLimit as Error).message).toBe((oneLimit as Error).message);
    expect((threeLimit as Error).message).toMatch(/ABACUS_SAMPLE_MEMORY_MB/);
  }, 180_000);
});
