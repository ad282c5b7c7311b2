import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSameBuild } from '../../../../test/support/built-samples';
import type { BuiltSamples, FeatureDef, SampleBuildRequest } from './sample-build.types';
import { buildSamples, orderedFileRuns } from './sample-builder';

// A set of many Parquet files is joined and ordered a run of files at a time when it is larger than
// one sort should hold (joinChunkBytes) and the files' time ranges do not overlap; the built samples
// must be exactly those of the one global sort.

let dir: string;

async function sql(...statements: string[]): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  try {
    for (const s of statements) await con.run(s);
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

/** rows of day d (ts in [d * 1000, d * 1000 + 999]) written in a scrambled order, as partition day=d/ */
const dayRows = (d: number, n: number, overlap = 0): string =>
  `SELECT ${d} * 1000 + (i * 37) % ${n} - ${overlap} AS ts, ${d} * 100000 + i AS imp, (i * 7 + ${d}) % 13 AS user_id,
     CAST((hash(i, ${d}) % 5) = 0 AS INTEGER) AS click,
     CASE WHEN i % 11 = 0 THEN NULL ELSE (hash(i, ${d}, 1) % 1000) / 10.0 END AS x,
     'c' || (hash(i, ${d}, 2) % 17) AS city, [CAST(hash(i, ${d}, 3) % 9 AS INTEGER), CAST(i % 4 AS INTEGER)] AS tags
   FROM range(${n}) r(i) ORDER BY hash(i, ${d}, 9)`;

async function writeDays(name: string, days: number[], n: number, overlapDay?: number): Promise<string> {
  const root = path.join(dir, name);
  for (const d of days) {
    await mkdir(path.join(root, `day=${d}`), { recursive: true });
    await sql(
      `COPY (${dayRows(d, n, d === overlapDay ? 700 : 0)}) TO '${path.join(root, `day=${d}`, 'part.parquet')}' (FORMAT parquet)`,
    );
  }
  return root;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'abacus-runs-'));
  await writeDays('timed', [0, 1, 2, 3, 4, 5], 400);
  await writeDays('overlapping', [0, 1, 2, 3], 400, 2);
  // user snapshots at several times, joined point-in-time
  await sql(
    `COPY (SELECT u AS user_id, t * 700 AS ts, (u * 3 + t) / 7.0 AS score FROM range(13) a(u), range(9) b(t)) TO '${path.join(dir, 'users.parquet')}' (FORMAT parquet)`,
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const features: FeatureDef[] = [
  { name: 'x', kind: 'numeric', source: { kind: 'column' } },
  { name: 'city', kind: 'categorical', source: { kind: 'column' } },
  { name: 'tags', kind: 'multi_id', source: { kind: 'column' } },
];

const request = (set: string, time = true, testFrom = 4500): SampleBuildRequest => ({
  samples: { file: path.join(dir, set), version: set, label: 'click', ...(time ? { time: 'ts' } : {}), groupKey: 'user_id' },
  features: [
    ...features,
    ...(time
      ? [
          {
            name: 'score',
            kind: 'numeric' as const,
            source: {
              kind: 'table' as const,
              file: path.join(dir, 'users.parquet'),
              entityKey: 'user_id',
              sampleKey: 'user_id',
              column: 'score',
              timeColumn: 'ts',
            },
          },
        ]
      : []),
  ],
  split: time ? { testFrom } : { testFraction: 0.25, seed: 3 },
});

async function build(req: SampleBuildRequest, joinChunkBytes?: number): Promise<{ built: BuiltSamples; runs: string[] }> {
  const runs: string[] = [];
  const built = await buildSamples(req, {
    joinChunkBytes,
    rangeRows: 250,
    onProgress: (_f, m) => {
      if (m.includes('runs of files')) runs.push(m);
    },
  });
  return { built, runs };
}

describe('buildSamples: a large set joined a run of files at a time', () => {
  it('time-disjoint day partitions: runs of files, the same samples as one sort (point-in-time join included)', async () => {
    const one = await build(request('timed'));
    expect(one.runs).toEqual([]);
    // 100 bytes per run: every file a run of its own
    const runs = await build(request('timed'), 100);
    expect(runs.runs.length).toBe(6);
    expect(runs.runs[5]).toContain('6 of 6 runs of files');
    expect(one.built.split.trainRows + one.built.split.testRows).toBe(2400);
    expectSameBuild(one.built, runs.built);
    // two files a run
    const pairs = await build(request('timed'), 800 * 8 * 9);
    expect(pairs.runs.length).toBe(3);
    expectSameBuild(one.built, pairs.built);
  });

  it('overlapping time ranges: one sort, whatever the size', async () => {
    const small = await build(request('overlapping', true, 2500), 100);
    expect(small.runs).toEqual([]);
    expect(small.built.train.rows + small.built.test.rows).toBe(1600);
    expectSameBuild((await build(request('overlapping', true, 2500))).built, small.built);
  });

  it('a set without a time column: runs in read order, the same hash split and rows', async () => {
    const one = await build(request('timed', false));
    const runs = await build(request('timed', false), 100);
    expect(runs.runs.length).toBe(6);
    expectSameBuild(one.built, runs.built);
  });
});

describe('orderedFileRuns', () => {
  const file = (index: number, minT: number, maxT: number, rows = 10) => ({ index, rows, minT, maxT });
  it('orders files by time, groups them up to the run size, keeps a large file alone', () => {
    expect(orderedFileRuns([file(0, 20, 29), file(1, 0, 9), file(2, 10, 19)], 20)).toEqual([[1, 2], [0]]);
    expect(orderedFileRuns([file(0, 0, 9, 50), file(1, 10, 19), file(2, 20, 29)], 20)).toEqual([[0], [1, 2]]);
  });
  it('a shared instant only where the earlier file is read first; overlaps give null', () => {
    expect(orderedFileRuns([file(0, 0, 10), file(1, 10, 20)], 5)).toEqual([[0], [1]]);
    expect(orderedFileRuns([file(1, 0, 10), file(0, 10, 20)], 5)).toBeNull();
    expect(orderedFileRuns([file(0, 0, 15), file(1, 10, 20)], 5)).toBeNull();
  });
  it('skips empty files', () => {
    expect(orderedFileRuns([file(0, 0, 0, 0), file(1, 5, 6)], 5)).toEqual([[1]]);
  });
});
