import { readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTable } from '@abacus/samples';
import { scoreTableAsync } from '@abacus/scoring';
import { bundleThreadScript } from '../../../../test/support/thread-bundle';
import { duckdbShare, scoreFile, scoreOffThread, type ScoreJob } from './score-thread';

let dir = '';
let script = '';
let file = '';

beforeAll(async () => {
  ({ dir, script } = await bundleThreadScript(path.join(__dirname, 'score-thread.ts')));
  file = path.join(dir, 'samples.csv');
  const rows = ['t,x,city,z,label'];
  for (let i = 0; i < 5000; i++) {
    const x = i % 23 === 0 ? '' : String(((i * 7919) % 1000) / 10);
    const city = ['paris', 'rome', 'oslo', 'lima', ''][i % 5];
    const y = ((i * 7919) % 1000 < 300 || (city === 'paris' && i % 3 === 0) ? 1 : 0) ^ (i % 7 === 0 ? 1 : 0);
    rows.push(`${i},${x},${city},${(i * 104729) % 977},${y}`);
  }
  await writeFile(file, rows.join('\n') + '\n');
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('scoreFile (streaming)', () => {
  it('gives the report of the columns read into memory, on one thread or several, spilling under the given folder', async () => {
    const tempDir = path.join(dir, 'tmp');
    const job: ScoreJob = {
      file,
      columns: ['x', 'city', 'z', 'label', 't'],
      options: { label: 'label', time: 't', testFrom: 3500, prebins: 25, maxBins: 6 },
      duckdb: { memoryLimitMb: 128, tempDir, threads: 2 },
    };
    const expected = await scoreTableAsync(await readTable(file, { columns: job.columns }), job.options);
    const inline = await scoreFile(job);
    expect(inline.report).toEqual(expected);
    expect(inline.rows).toBe(5000);
    expect((await scoreOffThread(job, {}, script, 3)).report).toEqual(expected);
    // each pass's folder is gone once it ends
    expect(await readdir(tempDir)).toEqual([]);
  });

  it('gives each of k threads a k-th of the memory cap and of the cores', () => {
    expect(duckdbShare({ memoryLimitMb: 2048, tempDir: 'x', threads: 8 }, 4)).toEqual({
      memoryLimitMb: 512,
      tempDir: 'x',
      threads: 2,
    });
    expect(duckdbShare({ memoryLimitMb: 100, threads: 2 }, 3)).toEqual({ memoryLimitMb: 33, threads: 1 });
    expect(duckdbShare(undefined, 1).threads).toBe(os.availableParallelism());
  });
});
