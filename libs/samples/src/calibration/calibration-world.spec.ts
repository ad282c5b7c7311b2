import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { writeCalibrationWorld } from './calibration-world';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'calibration-world-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('calibration worlds', () => {
  it('plant every role, vary their shape, and know the useful candidate gain', async () => {
    const worlds = [];
    for (const seed of [1, 2, 3, 4, 5, 6]) worlds.push(await writeCalibrationWorld(seed, 6_000, dir));
    for (const w of worlds) {
      const roles = (r: string) => w.truth.features.filter((f) => f.role === r);
      expect(roles('strong').length).toBeGreaterThanOrEqual(2);
      expect(roles('weak').length).toBeGreaterThanOrEqual(1);
      expect(roles('noise').length).toBeGreaterThanOrEqual(3);
      expect(roles('useful-candidate')).toHaveLength(1);
      expect(roles('noise-candidate')).toHaveLength(1);
      expect(w.truth.base).not.toContain('c1');
      expect(w.truth.oracle.usefulGain).toBeGreaterThan(0.005);
      expect(w.truth.rows).toBeGreaterThanOrEqual(4_500);
      expect(w.truth.rows).toBeLessThanOrEqual(7_500);
    }
    const all = worlds.flatMap((w) => w.truth.features);
    expect(new Set(all.map((f) => f.shape)).size).toBe(5);
    expect(all.some((f) => f.missing > 0)).toBe(true);
    expect(all.some((f) => f.role === 'redundant')).toBe(true);
    expect(new Set(worlds.map((w) => w.truth.rows)).size).toBe(worlds.length);

    // a redundant copy is strongly correlated with what it copies; the label rate is near the planted base rate
    const w = worlds.find((x) => x.truth.features.some((f) => f.role === 'redundant'))!;
    const copy = w.truth.features.find((f) => f.role === 'redundant')!;
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    const rows = (
      await conn.runAndReadAll(`SELECT corr("${copy.name}", "${copy.copyOf}"), count(*) FROM read_parquet('${w.file}')`)
    ).getRows();
    conn.closeSync();
    db.closeSync();
    expect(Math.abs(Number(rows[0]![0]))).toBeGreaterThan(0.85);
    expect(Number(rows[0]![1])).toBe(w.truth.rows);
  });
});
