import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FeatureEntity, SampleSetEntity } from '@abacus/data';
import { parseExprText } from '@abacus/samples';
import { measureExpressions } from './expression-storage';

/** Storage of expression features, measured from their values over the set (at most the first N rows of a large one). */
let dir: string;
let file: string;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-expr-storage-'));
  file = path.join(dir, 'set.parquet');
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  await con.run(
    `COPY (SELECT 1000 + i AS ts, i % 7 AS user_id, ['a', 'b', 'c'][1 + i % 3] AS color, (i * 37 % 101) / 10.0 AS price, (i % 5 = 0)::INTEGER AS click
       FROM range(1000) t(i)) TO '${file}' (FORMAT parquet)`,
  );
  con.closeSync();
  db.closeSync();
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const ss = {
  name: 'set',
  rowCount: 1000,
  labelColumn: 'click',
  timeColumn: 'ts',
  labelStats: null,
  schema: [
    { name: 'ts', kind: 'numeric', sourceType: 'BIGINT' },
    { name: 'user_id', kind: 'numeric', sourceType: 'BIGINT' },
    { name: 'color', kind: 'categorical', sourceType: 'VARCHAR' },
    { name: 'price', kind: 'numeric', sourceType: 'DOUBLE' },
    { name: 'click', kind: 'numeric', sourceType: 'INTEGER' },
  ],
} as unknown as SampleSetEntity;
const feature = (name: string, kind: FeatureEntity['kind'], text: string) =>
  ({ name, kind, businessLine: 'feed', expression: { ast: parseExprText(text) } }) as unknown as FeatureEntity;

describe('expression storage', () => {
  const features = [feature('price_rate', 'numeric', 'price * rate(by: user_id, over: 100m)'), feature('cc', 'categorical', 'cross(color, user_id, buckets: 64)')];
  const local = (rel: string) => Promise.resolve(rel);

  it('measures over every row of a set within the cap', async () => {
    const skipped: { name: string; reason: string }[] = [];
    const m = await measureExpressions({} as DataSource, ss, [file], features, skipped, local);
    expect(skipped).toEqual([]);
    expect(m.get('price_rate')).toMatchObject({ bytes: 4, stats: { rows: 1000 } });
    expect(m.get('cc')!.how).toMatch(/categorical id: 4 bytes \(int32\) per value over 1,000 rows of table set \(expressions computed over its 1000 rows\)/);
  });

  it('measures a larger set over its first rows in time order, and says so', async () => {
    const m = await measureExpressions({} as DataSource, ss, [file], features, [], local, 300);
    expect(m.get('price_rate')).toMatchObject({ bytes: 4, stats: { rows: 300 } });
    expect(m.get('cc')!.stats.distinct).toBeGreaterThan(10);
    expect(m.get('cc')!.how).toMatch(/over 300 rows of table set \(expressions computed over the first 300 of its 1,000 rows, in time order\)/);
  });
});
