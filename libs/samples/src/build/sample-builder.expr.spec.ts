import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseExprText } from '../expr/feature-expr.text';
import { fnv1a32 } from './feature-hash';
import { SampleBuildError } from './sample-build.error';
import type { EncodedSplit, FeatureDef, SampleBuildRequest } from './sample-build.types';
import { encodeRanges } from './range-threads';
import { buildSamples, concatSplits, prepareBuild, sampleBuildKey } from './sample-builder';

/** expression features built from a Parquet set: the values the builder encodes against the rules read plainly */
let dir: string;
interface Row {
  ts: number;
  user_id: number;
  cat: string | null;
  price: number | null;
  click: number;
}
const rows: Row[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'abacus-expr-build-'));
  // 3,000 impressions over 20 days, several per hour (ties), 40 users, 4 categories; clicks more likely
  // for a user's favourite category, so a rate by (user, category) carries signal
  let seed = 17;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed / 2 ** 31);
  for (let i = 0; i < 3000; i++) {
    const user = 1 + Math.floor(rnd() * 40);
    const cat = rnd() < 0.05 ? null : ['a', 'b', 'c', 'd'][Math.floor(rnd() * 4)];
    const fav = ['a', 'b', 'c', 'd'][user % 4];
    rows.push({
      ts: 1_700_000_000 + Math.floor((i / 3000) * 20 * 24) * 3600,
      user_id: user,
      cat,
      price: rnd() < 0.1 ? null : Math.round(rnd() * 1000) / 10,
      click: rnd() < (cat === fav ? 0.4 : 0.05) ? 1 : 0,
    });
  }
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const v = (x: unknown) => (x === null ? 'NULL' : typeof x === 'string' ? `'${x}'` : String(x));
  await con.run(
    `COPY (SELECT * FROM (VALUES ${rows.map((r) => `(${[r.ts, r.user_id, r.cat, r.price, r.click].map(v).join(', ')})`).join(', ')})
       t(ts, user_id, cat, price, click)) TO '${path.join(dir, 'imps.parquet')}' (FORMAT parquet)`,
  );
  con.closeSync();
  db.closeSync();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const expr = (name: string, kind: FeatureDef['kind'], text: string): FeatureDef => ({
  name,
  kind,
  source: { kind: 'expression', expression: parseExprText(text) },
});
const request = (features: FeatureDef[]): SampleBuildRequest => ({
  samples: { file: path.join(dir, 'imps.parquet'), label: 'click', time: 'ts' },
  features,
  split: { testFraction: 0.2 },
});
const slot = (s: EncodedSplit, name: string) => s.slots.find((x) => x.name === name)!;

describe('sample builder: expression features', () => {
  it('builds ratios, point-in-time rates, crosses, buckets and last-n lists as the rules say', async () => {
    const built = await buildSamples(
      request([
        { name: 'price', kind: 'numeric', source: { kind: 'column' } },
        expr('ctr_7d', 'numeric', 'rate(by: [user_id, cat], over: 7d)'),
        expr('price_per_day', 'numeric', 'price / (since(by: user_id) / 86400)'),
        expr('user_cat', 'categorical', 'cross(user_id, cat, buckets: 64)'),
        expr('price_band', 'categorical', 'bucketize(price, [10, 50])'),
        expr('recent_cats', 'multi_id', 'last(cat, by: user_id, n: 3)'),
      ]),
      { workDir: dir },
    );
    // rows in time order (they were written so), the last 20 % of times the test split
    const all = [...rows].map((r, rid) => ({ ...r, rid }));
    const train = all.filter((r) => r.ts < built.split.testFrom!);
    const test = all.filter((r) => r.ts >= built.split.testFrom!);
    expect(built.train.rows).toBe(train.length);
    expect(built.test.rows).toBe(test.length);
    const numericAt = (s: EncodedSplit, name: string, i: number) => s.numeric[i * s.numericNames.length + s.numericNames.indexOf(name)];

    const rate = (r: Row) => {
      if (r.cat === null) return null;
      const prior = rows.filter((o) => o.user_id === r.user_id && o.cat === r.cat && o.ts < r.ts && o.ts >= r.ts - 7 * 86400);
      return prior.length ? prior.reduce((a, o) => a + o.click, 0) / prior.length : null;
    };
    let checked = 0;
    for (const [split, list] of [
      [built.train, train],
      [built.test, test],
    ] as const) {
      list.forEach((r, i) => {
        const want = rate(r);
        if (want !== null) {
          expect(numericAt(split, 'ctr_7d', i)).toBeCloseTo(want, 5);
          checked++;
        }
        // a cross: FNV-1a of the parts joined by the unit separator, mod the buckets (ids from 1; 0 is missing)
        const ids = slot(split, 'user_cat');
        const got = ids.ids.slice(ids.offsets[i], ids.offsets[i + 1]);
        if (r.cat === null) expect([...got].every((x) => x < 0)).toBe(true);
        else expect([...got]).toEqual([fnv1a32(`${r.user_id}\u001f${r.cat}`) % 64]);
        // buckets: the number of boundaries at or below the price
        const band = slot(split, 'price_band');
        const b = [...band.ids.slice(band.offsets[i], band.offsets[i + 1])];
        if (r.price !== null) expect(b).toEqual([(r.price >= 10 ? 1 : 0) + (r.price >= 50 ? 1 : 0)]);
        else expect(b.every((x) => x < 0)).toBe(true);
        // last 3 categories of earlier times
        const part = all.filter((o) => o.user_id === r.user_id).sort((a, c) => a.ts - c.ts || a.rid - c.rid);
        const first = part.findIndex((o) => o.ts === r.ts);
        const want3 = part.slice(Math.max(0, first - 3), first).filter((o) => o.cat !== null);
        const lst = slot(split, 'recent_cats');
        expect(lst.offsets[i + 1] - lst.offsets[i], `row ${r.rid}`).toBe(want3.length);
      });
    }
    expect(checked).toBeGreaterThan(1000);
    // the id spaces: the cross is hashed as the registry says, the bucketize has boundaries + 1 ids
    expect(built.idSpaces.user_cat).toMatchObject({ kind: 'hash', buckets: 64 });
    expect(built.inputs.slots.find((s) => s.name === 'price_band')!.vocab).toBeGreaterThanOrEqual(3);
    // the rate carries the planted signal: its AUC on the test rows is well above chance
    const scored = test.map((r, i) => ({ y: r.click, s: numericAt(built.test, 'ctr_7d', i) }));
    const pos = scored.filter((x) => x.y === 1);
    const neg = scored.filter((x) => x.y === 0);
    let wins = 0;
    for (const p of pos) for (const n of neg) wins += p.s > n.s ? 1 : p.s === n.s ? 0.5 : 0;
    expect(wins / (pos.length * neg.length)).toBeGreaterThan(0.65);
  });

  it('keeps only the train rows asked for, with the values a full build gives them (aggregates still read every earlier row)', async () => {
    const features = [
      expr('ctr_7d', 'numeric', 'rate(by: [user_id, cat], over: 7d)'),
      expr('user_cat', 'categorical', 'cross(user_id, cat, buckets: 64)'),
      expr('n_1d', 'numeric', 'count(by: user_id, over: 1d)'),
    ];
    const full = await buildSamples(request(features), { workDir: dir });
    // every third train row, and the last one
    const keep = Uint32Array.from({ length: full.train.rows }, (_, i) => i).filter((i) => i % 3 === 1 || i === full.train.rows - 1);
    const work = path.join(dir, 'keep');
    const plan = await prepareBuild(request(features), work, { keepTrainRows: keep });
    expect(plan.trainRows).toBe(keep.length);
    expect(plan.testRows).toBe(0);
    const parts: { index: number; train: EncodedSplit }[] = [];
    await encodeRanges(plan, { onRange: async (r) => void parts.push({ index: r.index, train: r.train }) });
    const kept = concatSplits(parts.sort((a, b) => a.index - b.index).map((p) => p.train).filter((p) => p.rows > 0));
    await rm(work, { recursive: true, force: true });
    expect(kept.rows).toBe(keep.length);
    const num = (s: EncodedSplit, name: string, i: number) => s.numeric[i * s.numericNames.length + s.numericNames.indexOf(name)];
    const ids = (s: EncodedSplit, name: string, i: number) => {
      const x = slot(s, name);
      return [...x.ids.slice(x.offsets[i], x.offsets[i + 1])];
    };
    // the rate where it has earlier rows (a missing number is filled with the mean of the rows built,
    // which differ between the two builds): as the rule reads it over every earlier row, kept or not
    const train = rows.filter((r) => r.ts < full.split.testFrom!);
    let checked = 0;
    keep.forEach((at, k) => {
      const r = train[at];
      const prior = rows.filter((o) => o.user_id === r.user_id && o.cat === r.cat && o.ts < r.ts && o.ts >= r.ts - 7 * 86400);
      if (r.cat !== null && prior.length) {
        expect(num(kept, 'ctr_7d', k), `row ${at}`).toBeCloseTo(prior.reduce((a, o) => a + o.click, 0) / prior.length, 5);
        checked++;
      }
      expect(num(kept, 'n_1d', k), `row ${at}`).toBeCloseTo(num(full.train, 'n_1d', at), 6);
      expect(ids(kept, 'user_cat', k), `row ${at}`).toEqual(ids(full.train, 'user_cat', at));
    });
    expect(checked).toBeGreaterThan(300);
  });

  it('reads feature-table columns inside expressions as of each impression, never a later snapshot', async () => {
    // a profile snapshot per user every 2 days (some at exactly an impression's time); score encodes the
    // snapshot's number, so a value from a later snapshot than the rule allows is seen at once
    const base = rows[0].ts;
    const snaps: { user_id: number; snap_ts: number; score: number; seg: string }[] = [];
    for (let user = 1; user <= 40; user++)
      for (let k = 0; k < 11; k++)
        snaps.push({ user_id: user, snap_ts: base + k * 2 * 86400 + (user % 2 ? 0 : 1800), score: k * 100 + user, seg: ['x', 'y', 'z'][(user + k) % 3] });
    const file = path.join(dir, 'profiles.parquet');
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    await con.run(
      `COPY (SELECT * FROM (VALUES ${snaps.map((r) => `(${r.user_id}, ${r.snap_ts}, ${r.score}, '${r.seg}')`).join(', ')})
         t(user_id, snap_ts, score, seg)) TO '${file}' (FORMAT parquet)`,
    );
    con.closeSync();
    db.closeSync();
    const table = (kind: FeatureDef['kind'], column: string) => ({ kind, file, entityKey: 'user_id', sampleKey: 'user_id', timeColumn: 'snap_ts', column });
    const tables = { score: table('numeric', 'score'), seg: table('categorical', 'seg') };
    const withTables = (name: string, kind: FeatureDef['kind'], text: string): FeatureDef => ({
      name,
      kind,
      source: { kind: 'expression', expression: parseExprText(text), tables },
    });
    const built = await buildSamples(
      request([
        withTables('price_x_score', 'numeric', 'price * @score'),
        withTables('score_7d', 'numeric', 'mean(@score, by: user_id, over: 7d)'),
        withTables('seg_cat', 'categorical', 'cross(@seg, cat, buckets: 64)'),
        withTables('seg_1d', 'numeric', 'count(by: @seg, over: 1d)'),
      ]),
      { workDir: dir },
    );
    const asOf = (user: number, ts: number) =>
      snaps.filter((x) => x.user_id === user && x.snap_ts <= ts).sort((a, b) => b.snap_ts - a.snap_ts)[0] ?? null;
    const all = [...rows].map((r, rid) => ({ ...r, rid }));
    const train = all.filter((r) => r.ts < built.split.testFrom!);
    const numericAt = (s: EncodedSplit, name: string, i: number) => s.numeric[i * s.numericNames.length + s.numericNames.indexOf(name)];
    let checked = 0;
    let atTie = 0;
    train.forEach((r, i) => {
      const snap = asOf(r.user_id, r.ts);
      if (snap && snap.snap_ts === r.ts) atTie++;
      if (snap && r.price !== null) {
        // (a float32 of the product)
        expect(numericAt(built.train, 'price_x_score', i), `row ${r.rid}`).toBeCloseTo(Math.fround(r.price * snap.score), 2);
        checked++;
      }
      // the mean over the user's earlier rows of the score each had as of its own time
      const prior = rows.filter((o) => o.user_id === r.user_id && o.ts < r.ts && o.ts >= r.ts - 7 * 86400);
      const scores = prior.map((o) => asOf(o.user_id, o.ts)?.score).filter((x): x is number => x !== undefined);
      if (scores.length) expect(numericAt(built.train, 'score_7d', i), `row ${r.rid}`).toBeCloseTo(Math.fround(scores.reduce((a, b) => a + b, 0) / scores.length), 3);
      const ids = slot(built.train, 'seg_cat');
      const got = [...ids.ids.slice(ids.offsets[i], ids.offsets[i + 1])];
      if (snap && r.cat !== null) expect(got, `row ${r.rid}`).toEqual([fnv1a32(`${snap.seg}\u001f${r.cat}`) % 64]);
      // rows of earlier times whose own segment (as of their time) is this row's
      if (snap) {
        const same = rows.filter((o) => o.ts < r.ts && o.ts >= r.ts - 86400 && asOf(o.user_id, o.ts)?.seg === snap.seg).length;
        expect(numericAt(built.train, 'seg_1d', i), `row ${r.rid}`).toBe(same);
      }
    });
    expect(checked).toBeGreaterThan(1500);
    expect(atTie).toBeGreaterThan(10);
    // the build key follows the table's file; bad table refs are named at their field
    const key = sampleBuildKey(request([withTables('a', 'numeric', 'price * @score')]));
    expect(sampleBuildKey(request([{ ...withTables('a', 'numeric', 'price * @score'), source: { kind: 'expression', expression: parseExprText('price * @score'), tables: { score: { ...tables.score, version: 'v2' } } } }]))).not.toBe(key);
    const bad = async (f: FeatureDef, field: string, reason: RegExp) => {
      const err = await buildSamples(request([f]), { workDir: dir }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SampleBuildError);
      expect((err as SampleBuildError).field).toBe(field);
      expect((err as SampleBuildError).reason).toMatch(reason);
    };
    const source = (text: string, t: Record<string, ReturnType<typeof table>>) => ({ kind: 'expression' as const, expression: parseExprText(text), tables: t });
    await bad({ name: 'a', kind: 'numeric', source: source('price * @seg', { seg: table('numeric', 'seg') }) }, 'features.0.source.tables.seg.kind', /cannot be read from column 'seg'/);
    await bad({ name: 'a', kind: 'numeric', source: source('price * @sc', { sc: table('numeric', 'scor') }) }, 'features.0.source.tables.sc.column', /scor/);
    await bad({ name: 'a', kind: 'numeric', source: source('price * @other', tables) }, 'features.0.source.expression.args.1.ref', /no registered feature 'other'/);
    await bad({ name: 'a', kind: 'categorical', source: source('cross(@score, cat, buckets: 8)', tables) }, 'features.0.source.expression.args.0.ref', /is a number, not categories/);
    await bad(
      { name: 'a', kind: 'numeric', source: source('@score', { score: { ...tables.score, sampleKey: 'usr' } }) },
      'features.0.source.tables.score.sampleKey',
      /usr/,
    );
  });

  it('names the path inside the expression of a bad feature, and its build key changes with the expression', async () => {
    const bad = async (f: FeatureDef, field: string, reason: RegExp) => {
      const err = await buildSamples(request([f]), { workDir: dir }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SampleBuildError);
      expect((err as SampleBuildError).field).toBe(field);
      expect((err as SampleBuildError).reason).toMatch(reason);
    };
    await bad(expr('m', 'numeric', 'mean(price, by: usr, over: 7d)'), 'features.0.source.expression.by.0.col', /unknown column 'usr'/);
    await bad(expr('m', 'numeric', 'mean(cat, by: user_id, over: 7d)'), 'features.0.source.expression.of.col', /mean of a categorical column/);
    await bad(expr('m', 'numeric', 'price + click'), 'features.0.source.expression.args.1.col', /'click' is the label/);
    await bad(expr('m', 'categorical', 'price * 2'), 'features.0.source.expression', /mul\(…\) is numeric, where a categorical value is needed/);
    const untimed = { ...request([expr('m', 'numeric', 'count(by: user_id, over: 1d)')]), samples: { file: path.join(dir, 'imps.parquet'), label: 'click' } };
    const err = await buildSamples(untimed, { workDir: dir }).catch((e: unknown) => e);
    expect((err as SampleBuildError).field).toBe('features.0.source.expression.over');
    expect(sampleBuildKey(request([expr('m', 'numeric', 'count(by: user_id, over: 1d)')]))).not.toBe(
      sampleBuildKey(request([expr('m', 'numeric', 'count(by: user_id, over: 2d)')])),
    );
  });
});
