/**
 * Timing of buildSamples on a simulated world (a script, not part of the unit suite):
 *   npx esbuild libs/samples/src/build/sample-builder.bench.ts --bundle --platform=node --packages=external \
 *     --outfile=/tmp/sample-build-bench.js && NODE_PATH=$PWD/node_modules node /tmp/sample-build-bench.js 1000000
 * Prints one JSON line per build; the measured numbers are in the "Sample building" section of the README.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FEATURE_CATALOG } from '../simulator/feature-catalog';
import { simulateWorld } from '../simulator/simulator.service';
import { writeWorld } from '../simulator/world-writer';
import { buildSamples } from './sample-builder';

const TABLE = {
  user: { file: 'users.parquet', key: 'user_id', time: 'ts' },
  item: { file: 'items.parquet', key: 'item_id', time: null },
  context: { file: 'contexts.parquet', key: 'context_id', time: null },
} as const;

export async function benchSampleBuild(rows: number): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'abacus-build-bench-'));
  try {
    const world = simulateWorld({ seed: 3, rows });
    await writeWorld(world, dir);
    const t0 = performance.now();
    const joined = await buildSamples({
      samples: { file: path.join(dir, 'impressions.parquet'), label: 'click', time: 'ts', groupKey: 'user_id' },
      features: FEATURE_CATALOG.map((s) => ({
        name: s.name,
        kind: s.kind,
        source: {
          kind: 'table',
          file: path.join(dir, TABLE[s.table].file),
          entityKey: TABLE[s.table].key,
          sampleKey: TABLE[s.table].key,
          timeColumn: TABLE[s.table].time,
        },
      })),
      split: { testFrom: world.groundTruth.testFrom },
    });
    const report = (what: string, ms: number, b: typeof joined): void =>
      console.log(
        JSON.stringify({
          what,
          rows: b.split.trainRows + b.split.testRows,
          features: b.features.length,
          totalMs: Math.round(ms),
          readMs: Math.round(b.timings.readMs),
          joinMs: Math.round(b.timings.joinMs),
          encodeMs: Math.round(b.timings.encodeMs),
          rssMB: Math.round(process.memoryUsage().rss / 2 ** 20),
        }),
      );
    report('impressions + users (ASOF) + items + contexts', performance.now() - t0, joined);
    const t1 = performance.now();
    const flat = await buildSamples({
      samples: { file: path.join(dir, 'samples/feed.parquet'), label: 'click', time: 'ts' },
      features: FEATURE_CATALOG.map((s) => ({ name: s.name, kind: s.kind, source: { kind: 'column' as const } })),
      split: {},
    });
    report('flat samples/feed.parquet (column sources)', performance.now() - t1, flat);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  benchSampleBuild(Number(process.argv[2] ?? 1_000_000)).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
