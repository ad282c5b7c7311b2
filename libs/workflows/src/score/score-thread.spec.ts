import fs from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lowerThreadPriority, SCORE_THREAD_NICE, scoreFile, scoreOffThread, type ScoreJob } from './score-thread';
import { bundleThreadScript } from '../../../../test/support/thread-bundle';
import { buildGate, buildStarted } from '../model/build-gate';

// the thread script compiled from these sources (in the built app it lies beside the module)
let dir = '';
let script = '';
let file = '';
let wide = '';

beforeAll(async () => {
  ({ dir, script } = await bundleThreadScript(path.join(__dirname, 'score-thread.ts')));
  file = path.join(dir, 'samples.csv');
  const lines = ['x,city,label'];
  for (let i = 0; i < 4000; i++) {
    const x = ((i * 7919) % 1000) / 10;
    const city = ['paris', 'rome', 'oslo', 'lima'][i % 4];
    // informative both: low x and paris raise the rate; every 7th label flipped
    const y = (x < 30 || (city === 'paris' && x < 70) ? 1 : 0) ^ (i % 7 === 0 ? 1 : 0);
    lines.push(`${x},${city},${y}`);
  }
  await writeFile(file, lines.join('\n') + '\n');
  // five feature columns and a time column, for the split over threads
  wide = path.join(dir, 'wide.csv');
  const rows = ['t,x,city,z,w,k,label'];
  for (let i = 0; i < 4000; i++) {
    const x = ((i * 7919) % 1000) / 10;
    const city = ['paris', 'rome', 'oslo', 'lima'][i % 4];
    const z = (i * 104729) % 977;
    const w = ((i * 31) % 100) / 7;
    const k = ['a', 'b', 'c'][(i * 13) % 3];
    const y = (x < 30 || (city === 'paris' && w < 9) ? 1 : 0) ^ (i % 7 === 0 ? 1 : 0);
    rows.push(`${i},${x},${city},${z},${w},${k},${y}`);
  }
  await writeFile(wide, rows.join('\n') + '\n');
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const job = (over: Partial<ScoreJob> = {}): ScoreJob => ({
  file,
  columns: ['x', 'city', 'label'],
  options: { label: 'label', prebins: 20, maxBins: 6, minBinShare: 0.05, minCategoryShare: 0.01, smoothing: 0.5 },
  ...over,
});

describe('scoreOffThread', () => {
  it('scores on a worker thread exactly as on the calling thread, reporting progress', async () => {
    const columns: number[] = [];
    let read = 0;
    const off = await scoreOffThread(job(), { read: () => void (read += 1), column: (done) => void columns.push(done) }, script);
    const inline = await scoreFile(job());
    expect(off.ranOn).toBe('thread');
    expect(off.rows).toBe(4000);
    expect(off.report).toEqual(inline.report);
    expect(off.report.features.map((f) => f.name).sort()).toEqual(['city', 'x']);
    expect(off.report.features.every((f) => f.iv > 0)).toBe(true);
    expect(read).toBe(1);
    expect(columns).toEqual([1, 2]);
  });

  it.runIf(process.platform === 'linux')(
    'scores at a lower priority than the build and training beside it: its own thread and its DuckDB threads, not the process',
    async () => {
      const mine = os.getPriority(0);
      // every thread's nice value (field 19 of /proc/self/task/<tid>/stat), sampled while the scoring runs
      const seen = new Set<number>();
      const sample = () => {
        for (const tid of fs.readdirSync('/proc/self/task')) {
          try {
            const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
            seen.add(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
          } catch {
            // the thread ended meanwhile
          }
        }
      };
      const timer = setInterval(sample, 1);
      try {
        const off = await scoreOffThread(job(), { column: () => sample() }, script);
        expect(off.ranOn).toBe('thread');
      } finally {
        clearInterval(timer);
      }
      expect(seen.has(Math.max(mine, SCORE_THREAD_NICE))).toBe(true);
      // the process (this thread) keeps its priority, and the calling thread is never lowered
      expect(os.getPriority(0)).toBe(mine);
      expect(lowerThreadPriority()).toBe(false);
      expect(os.getPriority(0)).toBe(mine);
    },
  );

  it('waits for the sample builds of this process: before the first pass, between columns, at most its cap', async () => {
    const wideJob = job({ file: wide, columns: ['x', 'city', 'z', 'w', 'k', 'label'] });
    const plain = await scoreOffThread(wideJob, {}, script, 2);
    expect(plain.buildWaitMs).toBe(0);
    const gated = { ...wideJob, builds: { gate: buildGate(), maxWaitMs: 20_000 } };
    // a build running when the scoring starts: nothing is read until it ends
    let end = buildStarted();
    let read = 0;
    const before = scoreOffThread(gated, { read: () => void (read += 1) }, script, 2);
    // (a thread takes a few hundred ms to start, up to a second on a loaded 2-core machine: the build
    // is held well past that, so the scoring is waiting on it for at least the last 300 ms)
    await new Promise((r) => setTimeout(r, 3_000));
    expect(read).toBe(0);
    end();
    const first = await before;
    expect(read).toBe(1);
    expect(first.buildWaitMs).toBeGreaterThanOrEqual(300);
    expect(first.report).toEqual(plain.report);
    // a build that starts after the first column: the next columns wait for it (inline, the same rule)
    let columnsWhileBuilding = 0;
    let building = false;
    const between = await scoreOffThread(
      gated,
      {
        column: (done) => {
          if (building) columnsWhileBuilding += 1;
          if (done === 1) {
            end = buildStarted();
            building = true;
            setTimeout(() => {
              building = false;
              end();
            }, 300);
          }
        },
      },
      null,
    );
    expect(between.ranOn).toBe('inline');
    expect(columnsWhileBuilding).toBe(0);
    expect(between.buildWaitMs).toBeGreaterThanOrEqual(250);
    expect(between.report).toEqual(plain.report);
    // a build that outlasts the cap: the scoring goes on beside it
    end = buildStarted();
    try {
      const capped = await scoreOffThread({ ...wideJob, builds: { gate: buildGate(), maxWaitMs: 300 } }, {}, script, 2);
      expect(capped.buildWaitMs).toBeGreaterThanOrEqual(290);
      expect(capped.buildWaitMs).toBeLessThan(2_000);
      expect(capped.report).toEqual(plain.report);
    } finally {
      end();
    }
  });

  it('runs inline where there is no thread script', async () => {
    const r = await scoreOffThread(job(), {}, null);
    expect(r.ranOn).toBe('inline');
    expect(r.report).toEqual((await scoreFile(job())).report);
  });

  it("hands the thread's error back with its name and message (the trial runner classifies it)", async () => {
    const bad = job({ columns: ['x', 'nope', 'label'] });
    const inline = await scoreFile(bad).catch((e: Error) => e);
    const off = await scoreOffThread(bad, {}, script).catch((e: Error) => e);
    expect(inline).toBeInstanceOf(Error);
    expect(off).toBeInstanceOf(Error);
    expect((off as Error).name).toBe((inline as Error).name);
    expect((off as Error).message).toBe((inline as Error).message);
    expect((off as Error).message).toContain('nope');
  });

  it('ends the thread when a progress callback throws (a cancelled trial) and when the signal aborts', async () => {
    const cancelled = await scoreOffThread(
      job(),
      {
        read: () => {
          throw new Error('trial cancelled');
        },
      },
      script,
    ).catch((e: Error) => e);
    expect((cancelled as Error).message).toBe('trial cancelled');
    const ac = new AbortController();
    ac.abort();
    const aborted = await scoreOffThread(job(), { signal: ac.signal }, script).catch((e: Error) => e);
    expect((aborted as Error).message).toBe('scoring aborted');
  });

  it('deals the columns to several threads and gives the single-thread report', async () => {
    const wideJob = job({
      file: wide,
      columns: ['x', 'city', 'z', 'w', 'k', 'label', 't'],
      options: { ...job().options, time: 't', testFrom: 3000 },
    });
    const columns: number[] = [];
    let read = 0;
    const off = await scoreOffThread(wideJob, { read: () => void (read += 1), column: (done) => void columns.push(done) }, script, 3);
    const inline = await scoreFile(wideJob);
    expect(off.ranOn).toBe('thread');
    expect(off.report).toEqual(inline.report);
    expect(off.report.features.map((f) => f.name).sort()).toEqual(['city', 'k', 'w', 'x', 'z']);
    expect(off.report.features.every((f) => f.psi !== undefined)).toBe(true);
    expect(read).toBe(1);
    expect(Math.max(...columns)).toBe(5);
    expect(columns).toHaveLength(5);
    // more threads than columns: one per column
    expect((await scoreOffThread(wideJob, {}, script, 16)).report).toEqual(inline.report);
    // one thread's error ends the job with that error
    const bad = { ...wideJob, columns: ['x', 'city', 'nope', 'w', 'label', 't'] };
    const err = await scoreOffThread(bad, {}, script, 3).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('nope');
    const ac = new AbortController();
    ac.abort();
    expect(((await scoreOffThread(wideJob, { signal: ac.signal }, script, 3).catch((e: Error) => e)) as Error).message).toBe(
      'scoring aborted',
    );
  });

  it('rejects at once when aborted mid-read; the stopped threads end on their own and scoring goes on', async () => {
    const big = path.join(dir, 'big.csv');
    const lines = ['a,b,c,d,label'];
    for (let i = 0; i < 300_000; i++) lines.push(`${i % 97},${(i * 7) % 13},k${i % 50},${(i * 31) % 1000},${i % 3 === 0 ? 1 : 0}`);
    await writeFile(big, lines.join('\n') + '\n');
    const bigJob = job({ file: big, columns: ['a', 'b', 'c', 'd', 'label'] });
    for (const delay of [5, 40, 150]) {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), delay);
      const r = await scoreOffThread(bigJob, { signal: ac.signal }, script, 3).catch((e: Error) => e);
      // a fast machine may finish first; otherwise the abort's error
      if (r instanceof Error) expect(r.message).toBe('scoring aborted');
    }
    // the stopped threads end on their own; the process still scores
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await scoreOffThread(bigJob, {}, script, 2)).rows).toBe(300_000);
  }, 60_000);
});
