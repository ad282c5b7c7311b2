import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleThreadScript } from '../../../../test/support/thread-bundle';
import { buildThreadPool, encodeRanges } from './range-threads';
import { prepareBuild, type BuildPlan, type EncodedRange } from './sample-builder';

// The process's build threads are kept from one build to the next: the same threads encode the next
// build's ranges, a build that fails hands them back ready for the next, and the ranges are the same as
// those encoded on one thread.

let dir: string;
let script: string;
let bundle: string;
let plan: BuildPlan;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'abacus-range-threads-'));
  ({ dir: bundle, script } = await bundleThreadScript(path.join(__dirname, 'build-thread.ts')));
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  await con.run(
    `COPY (SELECT i AS ts, CAST(hash(i) % 4 = 0 AS INTEGER) AS click, (hash(i, 1) % 100) / 10.0 AS x,
       'c' || (hash(i, 2) % 9) AS city, [CAST(i % 5 AS INTEGER)] AS tags FROM range(3000) r(i))
     TO '${path.join(dir, 's.parquet')}' (FORMAT parquet)`,
  );
  con.closeSync();
  instance.closeSync();
  plan = await prepareBuild(
    {
      samples: { file: path.join(dir, 's.parquet'), label: 'click', time: 'ts' },
      features: [
        { name: 'x', kind: 'numeric', source: { kind: 'column' } },
        { name: 'city', kind: 'categorical', source: { kind: 'column' } },
        { name: 'tags', kind: 'multi_id', source: { kind: 'column' } },
      ],
      split: { testFrom: 2400 },
    },
    path.join(dir, 'work'),
    { rangeRows: 300 },
  );
}, 60_000);
afterAll(async () => {
  await buildThreadPool(1, script)?.close();
  await rm(dir, { recursive: true, force: true });
  await rm(bundle, { recursive: true, force: true });
});

const encode = async (threads: number, fail?: number): Promise<EncodedRange[]> => {
  const out: EncodedRange[] = [];
  await encodeRanges(plan, {
    threads,
    threadScript: threads > 1 ? script : null,
    onRange: async (r) => {
      if (r.index === fail) throw new Error(`range ${r.index} refused`);
      out.push(r);
    },
  });
  return out.sort((a, b) => a.index - b.index);
};

const plain = (rs: EncodedRange[]) =>
  rs.map((r) => ({
    index: r.index,
    missing: r.missing,
    positives: r.positives,
    splits: [r.train, r.test].map((s) => ({
      numeric: Array.from(s.numeric),
      labels: Array.from(s.labels),
      slots: s.slots.map((x) => ({ ids: Array.from(x.ids), offsets: Array.from(x.offsets) })),
    })),
  }));

const until = async (ok: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 25));
  expect(ok()).toBe(true);
};

describe('encodeRanges on the process’s build threads', () => {
  it('keeps the threads for the next build, hands them back after a failure, encodes as one thread does', async () => {
    expect(plan.ranges.length).toBe(10);
    const one = plain(await encode(1));
    const pool = buildThreadPool(3, script)!;
    expect(plain(await encode(3))).toEqual(one);
    expect(pool.size).toBe(3);
    expect(pool.spawned).toBe(3);
    // the next build runs on the same threads
    expect(plain(await encode(3))).toEqual(one);
    expect(pool.spawned).toBe(3);
    // a range refused: the build fails, the others are told to stop, every thread comes back
    await expect(encode(3, 4)).rejects.toThrow('range 4 refused');
    await until(() => pool.size === 3);
    expect(plain(await encode(3))).toEqual(one);
    expect(pool.spawned).toBe(3);
    // two builds at once: each has its own threads (three more started), and kept up to the pool's size
    const [a, b] = await Promise.all([encode(3), encode(3)]);
    expect(plain(a)).toEqual(one);
    expect(plain(b)).toEqual(one);
    expect(pool.spawned).toBe(6);
    expect(pool.size).toBe(3);
  }, 60_000);

  it('threads of one build only (reuseThreads false) end with it', async () => {
    const out: EncodedRange[] = [];
    const pool = buildThreadPool(3, script)!;
    const before = pool.spawned;
    await encodeRanges(plan, { threads: 2, threadScript: script, reuseThreads: false, onRange: async (r) => void out.push(r) });
    expect(plain(out.sort((a, b) => a.index - b.index))).toEqual(plain(await encode(1)));
    expect(pool.spawned).toBe(before);
    expect(fs.existsSync(plan.dbFile)).toBe(true);
  }, 60_000);
});

describe('openPlan', () => {
  it('gives every opening its own spill directory, removed on close', async () => {
    const { openPlan } = await import('./sample-builder');
    const a = await openPlan(plan, 64);
    const b = await openPlan(plan, 64);
    const dirOf = async (con: typeof a.con) =>
      String((await con.runAndReadAll(`SELECT current_setting('temp_directory')`)).getRows()[0][0]);
    const [da, db] = [await dirOf(a.con), await dirOf(b.con)];
    expect(da).not.toBe(db);
    // a query past the memory cap spills there
    await a.con.run(`SELECT * FROM range(3000000) r(i) ORDER BY hash(i)`);
    a.close();
    b.close();
    expect(fs.existsSync(da)).toBe(false);
    expect(fs.existsSync(db)).toBe(false);
  });
});
