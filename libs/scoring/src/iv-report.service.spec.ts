import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TableReadError } from '@abacus/samples';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatIvReport } from './iv-report.formatter';
import { ivReportFromFile } from './iv-report.service';
import { ScoringError } from './scoring.error';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'abacus-iv-'));
  const rows = ['day,city,spend,clicked'];
  for (let i = 0; i < 400; i++) {
    const city = ['a', 'b', 'c'][i % 3];
    rows.push(`${i < 300 ? 1 : 2},${city},${i % 17},${(city === 'a' && i % 2 === 0) || i % 11 === 0 ? 'yes' : 'no'}`);
  }
  await writeFile(path.join(dir, 'clicks.csv'), rows.join('\n') + '\n');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('ivReportFromFile', () => {
  it('scores a CSV file end to end with a time split, and formats a readable report', async () => {
    const r = await ivReportFromFile(path.join(dir, 'clicks.csv'), {
      label: 'clicked',
      positive: 'yes',
      time: 'day',
      testFrom: 2,
    });
    expect(r.rows).toEqual({ fit: 300, test: 100 });
    expect(r.positive).toBe('true'); // DuckDB reads yes/no as BOOLEAN
    expect(r.features.map((f) => f.name)).toEqual(['city', 'spend']);
    expect(r.features[0].psi).toBeGreaterThanOrEqual(0);
    const text = formatIvReport(r);
    expect(text).toMatch(/rank\s+feature\s+kind\s+iv\s+psi\s+bins/);
    expect(text).toMatch(/city \(categorical\): iv/);
  });

  it('reports an unknown label with the available columns, and unreadable files', async () => {
    await expect(ivReportFromFile(path.join(dir, 'clicks.csv'), { label: 'click' })).rejects.toThrow(
      new ScoringError(
        `label column 'click' not found in ${path.join(dir, 'clicks.csv')} (available: day, city, spend, clicked)`,
      ),
    );
    await expect(ivReportFromFile(path.join(dir, 'none.parquet'), { label: 'x' })).rejects.toBeInstanceOf(TableReadError);
  });
});
