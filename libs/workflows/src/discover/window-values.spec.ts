import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { concatSplits, encodeRanges, parseExprText, prepareBuild, type EncodedSplit, type FeatureDef } from '@abacus/samples';
import { WindowValues, windowFast } from './window-values';

/** The screen's aggregates from prefix sums equal the sample builder's window functions, row by row. */
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'abacus-window-values-'));
  // 4,000 rows over 40 days with many ties of time, 60 users (some missing), 5 categories (some
  // missing), a number without gaps; clicks leaning on a user's category
  let seed = 5;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed / 2 ** 31);
  const rows: string[] = [];
  for (let i = 0; i < 4000; i++) {
    const user = rnd() < 0.03 ? 'NULL' : String(1 + Math.floor(rnd() * 60));
    const cat = rnd() < 0.05 ? 'NULL' : `'${'abcde'[Math.floor(rnd() * 5)]}'`;
    const ts = 1_700_000_000 + Math.floor((i / 4000) * 40 * 24) * 3600 + (rnd() < 0.5 ? 0 : 1800);
    rows.push(`(${ts}, ${user}, ${cat}, ${Math.round(rnd() * 1000) / 10}, ${rnd() < 0.2 ? 1 : 0})`);
  }
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  await con.run(
    `COPY (SELECT * FROM (VALUES ${rows.join(', ')}) t(ts, user_id, cat, price, click) ORDER BY ts) TO '${path.join(dir, 'imps.parquet')}' (FORMAT parquet)`,
  );
  con.closeSync();
  db.closeSync();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('discover: window values', () => {
  it('gives the builder’s counts, rates, means, sums, times since and frequencies at every training row', async () => {
    const texts = [
      'count(by: user_id, over: 1d)',
      'count(by: [user_id, cat], over: 7d)',
      'rate(by: [user_id, cat], over: 7d)',
      'rate(by: cat, over: 12h)',
      'mean(price, by: user_id, over: 3d)',
      'sum(price, by: [user_id, cat], over: 30d)',
      'since(by: user_id)',
      'freq(cat)',
    ];
    const exprs = texts.map(parseExprText);
    for (const e of exprs) expect(windowFast(e)).toBe(true);
    expect(windowFast(parseExprText('distinct(cat, by: user_id, over: 7d)'))).toBe(false);
    const features: FeatureDef[] = [
      ...exprs.map((expression, i): FeatureDef => ({ name: `c${i}`, kind: 'numeric', source: { kind: 'expression', expression } })),
      { name: 'raw:price', kind: 'numeric', source: { kind: 'expression', expression: { col: 'price' } } },
      { name: 'key:user_id', kind: 'categorical', source: { kind: 'column', column: 'user_id' } },
      { name: 'key:cat', kind: 'categorical', source: { kind: 'column', column: 'cat' } },
    ];
    const work = path.join(dir, 'work');
    const plan = await prepareBuild(
      { samples: { file: path.join(dir, 'imps.parquet'), label: 'click', time: 'ts' }, features, split: { testFraction: 0.2 } },
      work,
      { withTimes: true },
    );
    const parts: { index: number; train: EncodedSplit }[] = [];
    await encodeRanges(plan, { onRange: async (r) => void parts.push({ index: r.index, train: r.train }) });
    const train = concatSplits(parts.sort((a, b) => a.index - b.index).map((p) => p.train).filter((p) => p.rows > 0));
    await rm(work, { recursive: true, force: true });
    expect(train.times).toHaveLength(train.rows);
    const col = (name: string) => {
      const j = train.numericNames.indexOf(name);
      return Float32Array.from({ length: train.rows }, (_, i) => train.numeric[i * train.numericNames.length + j]);
    };
    const ids = (name: string) => {
      const s = train.slots.find((x) => x.name === name)!;
      return Int32Array.from({ length: train.rows }, (_, i) => (s.offsets[i + 1] > s.offsets[i] ? s.ids[s.offsets[i]] : -1));
    };
    const at = Uint32Array.from({ length: train.rows }, (_, i) => i);
    const wv = new WindowValues(
      { rows: train.rows, time: train.times!, label: train.labels, ids: (n) => ids(`key:${n}`), values: (n) => col(`raw:${n}`) },
      at,
    );
    for (const [i, e] of exprs.entries()) {
      const want = col(`c${i}`);
      const got = wv.values(e);
      let compared = 0;
      for (let r = 0; r < train.rows; r++) {
        // missing here is the builder's NULL, which it fills with the train mean: compared where present
        if (Number.isNaN(got[r])) continue;
        expect(got[r], `${texts[i]} at row ${r}`).toBeCloseTo(want[r], 3);
        compared++;
      }
      expect(compared, texts[i]).toBeGreaterThan(0.5 * train.rows);
    }
  });
});
