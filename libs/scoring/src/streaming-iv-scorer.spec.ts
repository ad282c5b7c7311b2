import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTable } from '@abacus/samples';
import { scoreTableAsync } from './iv-scorer';
import type { ScoreTableOptions } from './score-table-options.schema';
import { scoreFileStreaming } from './streaming-iv-scorer';

let dir = '';
let instance: DuckDBInstance;
let con: DuckDBConnection;
let parquet = '';

// x numeric with NaN and nulls, c categorical, m id lists, t time, y label
const ROWS = `SELECT CASE WHEN i % 17 = 0 THEN NULL WHEN i % 19 = 0 THEN 'NaN'::DOUBLE ELSE (i * 7919 % 1000) / 10.0 END AS x,
  ['paris', 'rome', 'oslo', NULL][i % 4 + 1] AS c, CASE WHEN i % 11 = 0 THEN NULL ELSE [i % 5, i % 3, NULL] END AS m,
  i AS t, ((i * 7919 % 1000) < 300 OR (i % 4 = 0 AND i % 3 = 0) OR i % 7 = 0)::INTEGER AS y FROM range(6000) r(i)`;

const options: ScoreTableOptions = { label: 'y', time: 't', testFrom: 4500, maxBins: 6, minIdShare: 0.01 };
const inMemory = async (file: string, opts = options, columns?: string[]) =>
  scoreTableAsync(await readTable(file, { columns }), opts);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'abacus-stream-spec-'));
  instance = await DuckDBInstance.create(':memory:');
  con = await instance.connect();
  parquet = path.join(dir, 'samples.parquet');
  await con.run(`COPY (${ROWS}) TO '${parquet}' (FORMAT parquet)`);
});

afterAll(async () => {
  con?.closeSync();
  instance?.closeSync();
  await rm(dir, { recursive: true, force: true });
});

describe('scoreFileStreaming', () => {
  it('gives the in-memory report for a Parquet file, a CSV file and a folder of hive partitions', async () => {
    const expected = await inMemory(parquet);
    expect(expected.features.map((f) => f.kind).sort()).toEqual(['categorical', 'multi_id', 'numeric']);
    expect((await scoreFileStreaming(parquet, options, { memoryLimitMb: 64 })).report).toEqual(expected);

    const csv = path.join(dir, 'samples.csv');
    await con.run(`COPY (SELECT x, c, t, y FROM read_parquet('${parquet}')) TO '${csv}' (FORMAT csv, HEADER)`);
    const fromCsv = await scoreFileStreaming(csv, options, { memoryLimitMb: 64 });
    expect(fromCsv.report).toEqual(await inMemory(csv));
    expect(fromCsv.rows).toBe(6000);

    // hive partitions become VARCHAR columns (categorical), as the reader sees them
    const hive = path.join(dir, 'hive');
    await con.run(
      `COPY (SELECT *, i % 3 AS part FROM (SELECT *, t AS i FROM read_parquet('${parquet}'))) TO '${hive}' (FORMAT parquet, PARTITION_BY (part))`,
    );
    const fromHive = await scoreFileStreaming(hive, { ...options, exclude: ['i'] }, { memoryLimitMb: 64 });
    expect(fromHive.report).toEqual(await inMemory(hive, { ...options, exclude: ['i'] }));
    expect(fromHive.report.features.find((f) => f.name === 'part')?.kind).toBe('categorical');
  });

  it('reads only the named columns, reports progress per column, and times the first pass as the read', async () => {
    const columns = ['x', 'c', 'y', 't'];
    const events: string[] = [];
    const r = await scoreFileStreaming(parquet, options, {
      columns,
      memoryLimitMb: 64,
      onRead: (ms) => void events.push(`read ${ms >= 0}`),
      onColumn: (done, of) => void events.push(`${done}/${of}`),
    });
    expect(events).toEqual(['read true', '1/2', '2/2']);
    expect(r.report).toEqual(await inMemory(parquet, options, columns));
    expect(r.rows).toBe(6000);
    expect(r.report.rows).toEqual({ fit: 4500, test: 1500 });
  });

  it("throws the in-memory path's errors with the same messages", async () => {
    const same = async (opts: ScoreTableOptions, columns?: string[]) => {
      const a = await inMemory(parquet, opts, columns).catch((e: Error) => e);
      const b = await scoreFileStreaming(parquet, opts, { columns, memoryLimitMb: 64 }).catch((e: Error) => e);
      expect(a).toBeInstanceOf(Error);
      expect(b).toBeInstanceOf(Error);
      expect([(b as Error).name, (b as Error).message]).toEqual([(a as Error).name, (a as Error).message]);
      return (b as Error).message;
    };
    expect(await same(options, ['x', 'nope', 'y'])).toMatch(/unknown column 'nope'/);
    expect(await same({ ...options, label: 'c' })).toMatch(/has 3 distinct value\(s\) \(oslo, paris, rome\)/);
    expect(await same({ ...options, label: 'x' })).toMatch(
      /distinct value\(s\) \(0, 0\.1, .*, \.\.\.\); expected exactly 2 classes/,
    );
    expect(await same({ ...options, label: 'm' })).toMatch(/is a list column/);
    expect(await same({ ...options, positive: 'maybe' })).toMatch(/not a class/);
    expect(await same({ ...options, testFrom: 0 })).toMatch(/leaves 0 train and 6000 test rows/);
    expect(await same({ ...options, time: 'c' })).toMatch(/must be numeric/);
    expect(await same({ ...options, label: 'y', prebins: 1 })).toMatch(/invalid scoring options/);
    expect(await same(options, ['x', 'y'])).toMatch(/time column 't' not found/);
  });

  it('stays within a small memory cap by spilling to its temporary folder, which it removes', async () => {
    // 1M distinct doubles: sorting them takes more than 16 MiB
    const big = path.join(dir, 'distinct.parquet');
    await con.run(
      `COPY (SELECT hash(i) / 18446744073709551615.0 AS x, (hash(i * 7) % 10 < 3 OR hash(i) % 4 = 0)::INTEGER AS y FROM range(1000000) r(i)) TO '${big}' (FORMAT parquet)`,
    );
    const tempDir = path.join(dir, 'spill-here');
    let spilled = false;
    const r = await scoreFileStreaming(
      big,
      { label: 'y' },
      {
        memoryLimitMb: 16,
        threads: 1,
        tempDir,
        cutStrategy: 'rank',
        onColumn: async () => {
          for (const work of await readdir(tempDir)) spilled ||= existsSync(path.join(tempDir, work, 'spill'));
        },
      },
    );
    expect(spilled).toBe(true);
    expect(r.report).toEqual(await inMemory(big, { label: 'y' }));
    expect(await readdir(tempDir)).toEqual([]);
    // also after an error
    await scoreFileStreaming(big, { label: 'nope' }, { memoryLimitMb: 16, tempDir }).catch(() => undefined);
    expect(await readdir(tempDir)).toEqual([]);
  });

  it('names the memory cap when DuckDB cannot stay within it', async () => {
    const err = await scoreFileStreaming(parquet, options, { memoryLimitMb: 1, threads: 1 }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).name).toBe('ScoringError');
    expect((err as Error).message).toMatch(/^DuckDB needed more than its memory cap of 1 MiB: /);
    // not "out of memory": a cap that is too small fails the same way again, so the trial must not be retried
    expect((err as Error).message).not.toMatch(/out of memory/i);
  });

  it("is not confused by columns named like its queries' own aliases", async () => {
    const named = path.join(dir, 'named.parquet');
    await con.run(
      `COPY (SELECT (i * 7919 % 1000) / 10.0 AS x, (i % 13)::DOUBLE AS v, ['a', 'b', 'c'][i % 3 + 1] AS y, [i % 5, i % 3] AS id,
        (i % 9)::DOUBLE AS lo, (i % 4)::DOUBLE AS c, (i % 8)::DOUBLE AS e, (i % 12)::DOUBLE AS rk, (i % 14)::DOUBLE AS d, i AS s,
        ((i * 7919 % 1000) < 300 OR i % 7 = 0)::INTEGER AS l FROM range(3000) r(i)) TO '${named}' (FORMAT parquet)`,
    );
    const opts: ScoreTableOptions = { label: 'l', time: 's', testFrom: 2000, maxBins: 6, minIdShare: 0 };
    const expected = await inMemory(named, opts);
    expect(expected.features).toHaveLength(9);
    for (const cutStrategy of ['distinct', 'rank'] as const) {
      expect((await scoreFileStreaming(named, opts, { memoryLimitMb: 64, cutStrategy })).report).toEqual(expected);
    }
  });

  it('counts a numeric column the same way with either cut strategy, ties and all', async () => {
    const ties = path.join(dir, 'ties.csv');
    const lines = ['v,y'];
    for (let i = 0; i < 3000; i++)
      lines.push(`${[1, 1, 1, 2, 5, 5, 9, 9, 9, 9][i % 10] * (i % 7 === 0 ? -1 : 1)},${i % 3 === 0 ? 1 : 0}`);
    await mkdir(path.dirname(ties), { recursive: true });
    await writeFile(ties, lines.join('\n') + '\n');
    const expected = await inMemory(ties, { label: 'y', prebins: 50 });
    for (const cutStrategy of ['distinct', 'rank', 'auto'] as const) {
      expect((await scoreFileStreaming(ties, { label: 'y', prebins: 50 }, { memoryLimitMb: 64, cutStrategy })).report).toEqual(
        expected,
      );
    }
  });
});
