import { flatToTable, simulateWorld, type Table, type TableColumn } from '@abacus/samples';
import { describe, expect, it } from 'vitest';
import { scoreTable, scoreTableAsync } from './iv-scorer';
import { ScoringError } from './scoring.error';

const num = (name: string, values: number[]): TableColumn => ({
  name,
  kind: 'numeric',
  duckdbType: 'DOUBLE',
  values: Float64Array.from(values),
});
const cat = (name: string, values: (string | null)[]): TableColumn => {
  const dictionary: string[] = [];
  const codes = Int32Array.from(values, (v) => {
    if (v === null) return -1;
    if (!dictionary.includes(v)) dictionary.push(v);
    return dictionary.indexOf(v);
  });
  return { name, kind: 'categorical', duckdbType: 'VARCHAR', codes, dictionary };
};
const table = (columns: TableColumn[]): Table => ({
  file: 't.csv',
  rowCount:
    columns[0].kind === 'numeric'
      ? columns[0].values.length
      : columns[0].kind === 'categorical'
        ? columns[0].codes.length
        : columns[0].offsets.length - 1,
  columns,
});
const rep = <T>(v: T, n: number): T[] => Array.from({ length: n }, () => v);

describe('scoreTable: categorical', () => {
  it('computes exact WOE/IV without smoothing', () => {
    // A: 4 rows, 1 event (NE 3); B: 6 rows, 3 events (NE 3). E = 4, NE = 6.
    // A: dist_ne = 3/6, dist_e = 1/4 -> woe = ln 2,      iv_A = (1/2 - 1/4) ln 2
    // B: dist_ne = 3/6, dist_e = 3/4 -> woe = ln(2/3),   iv_B = (1/2 - 3/4) ln(2/3) = 1/4 ln 1.5
    // IV = 1/4 (ln 2 + ln 1.5) = 1/4 ln 3
    const t = table([cat('c', [...rep('A', 4), ...rep('B', 6)]), num('y', [1, 0, 0, 0, 1, 1, 1, 0, 0, 0])]);
    const r = scoreTable(t, { label: 'y' });
    expect(r.features).toHaveLength(1);
    const f = r.features[0];
    expect(f.kind).toBe('categorical');
    expect(f.iv).toBeCloseTo(Math.log(3) / 4, 6);
    expect(f.bins.map((b) => [b.range_or_values, b.count, b.events])).toEqual([
      [['B'], 6, 3],
      [['A'], 4, 1],
    ]);
    expect(f.bins[0].woe).toBeCloseTo(Math.log(2 / 3), 6);
    expect(f.bins[1].woe).toBeCloseTo(Math.log(2), 6);
    expect(r.positive).toBe('1');
    expect(r.woeConvention).toMatch(/ln\(dist_nonevent_i \/ dist_event_i\)/);
  });

  it('smooths every bin by 0.5 when a bin has zero non-events', () => {
    // A: 3 rows, 3 events, 0 NE; B: 5 rows, 1 event, 4 NE. E = 4, NE = 4, k = 2, a = 0.5: denominators 4 + 1 = 5.
    // A: de = 3.5/5 = 0.7, dn = 0.5/5 = 0.1 -> woe = ln(1/7), iv = (0.1 - 0.7) ln(1/7) = 0.6 ln 7
    // B: de = 1.5/5 = 0.3, dn = 4.5/5 = 0.9 -> woe = ln 3,    iv = 0.6 ln 3
    // IV = 0.6 ln 21
    const t = table([cat('c', [...rep('A', 3), ...rep('B', 5)]), num('y', [1, 1, 1, 1, 0, 0, 0, 0])]);
    const f = scoreTable(t, { label: 'y' }).features[0];
    expect(f.iv).toBeCloseTo(0.6 * Math.log(21), 6);
    const a = f.bins.find((b) => JSON.stringify(b.range_or_values) === '["A"]')!;
    expect(a.woe).toBeCloseTo(-Math.log(7), 6);
    expect(a.events).toBe(3);
  });

  it('keeps a missing bin and pools rare categories into __other__ when asked', () => {
    // 10 rows: A×5 (1 event), B×3 (1 event), C×1 (1 event), null×1 (0 events); minCategoryShare 0.15 pools C.
    const t = table([cat('c', [...rep('A', 5), ...rep('B', 3), 'C', null]), num('y', [1, 0, 0, 0, 0, 1, 0, 0, 1, 0])]);
    const f = scoreTable(t, { label: 'y', minCategoryShare: 0.15 }).features[0];
    expect(f.bins.map((b) => [b.range_or_values, b.count, b.events])).toEqual([
      [['A'], 5, 1],
      [['B'], 3, 1],
      [['__other__', 'C'], 1, 1],
      ['Missing', 1, 0],
    ]);
    // no zero-free bins -> smoothing: E = 3, NE = 7, k = 4, denominators 5 and 9
    const de = [1.5 / 5, 1.5 / 5, 1.5 / 5, 0.5 / 5];
    const dn = [4.5 / 9, 2.5 / 9, 0.5 / 9, 1.5 / 9];
    const iv = de.reduce((s, e, i) => s + (dn[i] - e) * Math.log(dn[i] / e), 0);
    expect(f.iv).toBeCloseTo(iv, 6);
  });
});

describe('scoreTable: numeric binning', () => {
  it('merges adjacent violators until the event rate is monotonic (trend chosen by IV)', () => {
    // values 1,2,3,4 × 10 rows with 1,3,2,6 events; prebins 4 -> cuts 2,3,4; rates .1 .3 .2 .6.
    // ascending pools [2,3) and [3,4) (rate .25); descending would pool everything (IV 0) -> ascending.
    // E = 12, NE = 28:  (-inf,2): E1 NE9  woe ln((9/28)/(1/12)) = ln(27/7)
    //                   [2,4):    E5 NE15 woe ln((15/28)/(5/12)) = ln(9/7)
    //                   [4,inf):  E6 NE4  woe ln((4/28)/(6/12))  = ln(2/7)
    // IV = (9/28-1/12) ln(27/7) + (15/28-5/12) ln(9/7) + (4/28-6/12) ln(2/7) = 5/21 ln(27/7) + 5/42 ln(9/7) + 5/14 ln(7/2)
    const x: number[] = [];
    const y: number[] = [];
    [1, 3, 2, 6].forEach((ev, i) => {
      for (let k = 0; k < 10; k++) {
        x.push(i + 1);
        y.push(k < ev ? 1 : 0);
      }
    });
    const f = scoreTable(table([num('x', x), num('y', y)]), { label: 'y', prebins: 4 }).features[0];
    expect(f.trend).toBe('ascending');
    expect(f.bins.map((b) => [b.range_or_values, b.count, b.events])).toEqual([
      ['(-inf, 2)', 10, 1],
      ['[2, 4)', 20, 5],
      ['[4, inf)', 10, 6],
    ]);
    expect(f.bins.map((b) => b.woe)).toEqual(
      [Math.log(27 / 7), Math.log(9 / 7), Math.log(2 / 7)].map((v) => Math.round(v * 1e6) / 1e6),
    );
    expect(f.iv).toBeCloseTo((5 / 21) * Math.log(27 / 7) + (5 / 42) * Math.log(9 / 7) + (5 / 14) * Math.log(7 / 2), 7);
  });

  it('puts NaN in its own Missing bin', () => {
    // x = 1 ×10 (1 event), 2 ×10 (5 events), NaN ×5 (4 events); prebins 2 -> cut at 2. E = 10, NE = 15.
    // (-inf,2): de .1  dn 9/15  -> ln 6,    iv (0.6 - 0.1) ln 6
    // [2,inf):  de .5  dn 5/15  -> ln(2/3), iv (1/3 - 1/2) ln(2/3) = 1/6 ln 1.5
    // Missing:  de .4  dn 1/15  -> ln(1/6), iv (1/15 - 0.4) ln(1/6) = 1/3 ln 6
    const x = [...rep(1, 10), ...rep(2, 10), ...rep(NaN, 5)];
    const y = [1, ...rep(0, 9), ...rep(1, 5), ...rep(0, 5), 1, 1, 1, 1, 0];
    const f = scoreTable(table([num('x', x), num('y', y)]), { label: 'y', prebins: 2 }).features[0];
    expect(f.bins.map((b) => [b.range_or_values, b.count, b.events])).toEqual([
      ['(-inf, 2)', 10, 1],
      ['[2, inf)', 10, 5],
      ['Missing', 5, 4],
    ]);
    expect(f.bins[2].woe).toBeCloseTo(-Math.log(6), 6);
    expect(f.iv).toBeCloseTo((5 / 6) * Math.log(6) + Math.log(1.5) / 6, 7);
  });

  it('merges bins below minBinShare into a neighbour', () => {
    // 2 rows of 1, 49 of 2, 49 of 3; prebins 4 -> cuts 2, 3; the 2-row bin (< 5% of 100) joins its only neighbour.
    const x = [1, 1, ...rep(2, 49), ...rep(3, 49)];
    const y = x.map((v, i) => (v === 3 ? i % 2 : i % 5 === 0 ? 1 : 0));
    const f = scoreTable(table([num('x', x), num('y', y)]), { label: 'y', prebins: 4, minBinShare: 0.05 }).features[0];
    expect(f.bins.map((b) => [b.range_or_values, b.count])).toEqual([
      ['(-inf, 3)', 51],
      ['[3, inf)', 49],
    ]);
  });

  it('respects maxBins and min share, with a monotonic WOE, on a large smooth feature', () => {
    const x: number[] = [];
    const y: number[] = [];
    for (let i = 0; i < 20_000; i++) {
      const v = (i * 7919) % 20_000;
      x.push(v);
      y.push(Math.sin(i * 12.9898) * 43758.5453 - Math.floor(Math.sin(i * 12.9898) * 43758.5453) < 0.05 + v / 40_000 ? 1 : 0);
    }
    const f = scoreTable(table([num('x', x), num('y', y)]), { label: 'y', maxBins: 5 }).features[0];
    expect(f.bins.length).toBeLessThanOrEqual(5);
    for (const b of f.bins) expect(b.count).toBeGreaterThanOrEqual(0.05 * 20_000);
    const woe = f.bins.map((b) => b.woe);
    expect(f.trend).toBe('ascending');
    for (let i = 1; i < woe.length; i++) expect(woe[i]).toBeLessThanOrEqual(woe[i - 1]);
  });
});

describe('scoreTable: multi-id', () => {
  it('weights each (row, id) pair by 1/len and keeps an [empty] bin', () => {
    // rows: [1,2] y1 | [1] y0 | [] y0 | [2] y1 | [1] y0
    // id1: count .5+1+1 = 2.5, events .5;  id2: count .5+1 = 1.5, events 1.5 (NE 0 -> smoothing);  empty: 1, 0
    // E = 2, NE = 3, k = 3, a = .5: denominators 3.5 and 4.5
    // id1: de 1/3.5, dn 2.5/4.5; id2: de 2/3.5, dn .5/4.5; empty: de .5/3.5, dn 1.5/4.5
    const col: TableColumn = {
      name: 'm',
      kind: 'multi_id',
      duckdbType: 'INTEGER[]',
      offsets: Int32Array.from([0, 2, 3, 3, 4, 5]),
      ids: Int32Array.from([1, 2, 1, 2, 1]),
    };
    const f = scoreTable(table([col, num('y', [1, 0, 0, 1, 0])]), { label: 'y', minIdShare: 0 }).features[0];
    expect(f.bins.map((b) => [b.range_or_values, b.count, b.events])).toEqual([
      [['1'], 2.5, 0.5],
      [['2'], 1.5, 1.5],
      ['[empty]', 1, 0],
    ]);
    const de = [1 / 3.5, 2 / 3.5, 0.5 / 3.5];
    const dn = [2.5 / 4.5, 0.5 / 4.5, 1.5 / 4.5];
    expect(f.iv).toBeCloseTo(
      de.reduce((s, e, i) => s + (dn[i] - e) * Math.log(dn[i] / e), 0),
      6,
    );
    expect(f.bins[0].woe).toBeCloseTo(Math.log(35 / 18), 6);
  });
});

describe('scoreTable: time split and PSI', () => {
  it('fits bins on the train range and computes PSI of the test range over them', () => {
    // train (t < 10): A×5 (2 events), B×5 (1 event);  test (t >= 10): A×8, B×2
    // PSI over bins [A, B]: e = (.5, .5), a = (.8, .2): (.8-.5) ln(1.6) + (.2-.5) ln(.4)
    const c = [...rep('A', 5), ...rep('B', 5), ...rep('A', 8), ...rep('B', 2)];
    const y = [1, 1, 0, 0, 0, 1, 0, 0, 0, 0, ...rep(0, 9), 1];
    const t = [...rep(1, 10), ...rep(10, 10)];
    const r = scoreTable(table([cat('c', c), num('y', y), num('t', t)]), { label: 'y', time: 't', testFrom: 10 });
    expect(r.rows).toEqual({ fit: 10, test: 10 });
    const f = r.features[0];
    expect(f.name).toBe('c');
    expect(f.bins.map((b) => b.count)).toEqual([5, 5]);
    expect(f.psi).toBeCloseTo(0.3 * Math.log(1.6) - 0.3 * Math.log(0.4), 7);
  });
});

describe('scoreTable: label handling and errors', () => {
  it('accepts a named positive class and rejects labels without exactly two classes', () => {
    const c = cat('c', ['a', 'a', 'b', 'b']);
    const r = scoreTable(table([c, cat('y', ['yes', 'no', 'no', 'yes'])]), { label: 'y', positive: 'yes' });
    expect(r.positive).toBe('yes');
    expect(r.events).toBe(2);
    expect(() => scoreTable(table([c, num('y', [0, 1, 2, 1])]), { label: 'y' })).toThrow(
      /3 distinct value\(s\) \(0, 1, 2\); expected exactly 2 classes/,
    );
    expect(() => scoreTable(table([c, num('y', [1, 1, 1, 1])]), { label: 'y' })).toThrow(ScoringError);
    expect(() => scoreTable(table([c, cat('y', ['u', 'v', 'u', 'v'])]), { label: 'y' })).toThrow(/pass the positive/);
    expect(() => scoreTable(table([c, num('y', [0, 1, 0, 1])]), { label: 'y', positive: 7 })).toThrow(/not a class/);
    expect(() => scoreTable(table([c, num('y', [0, 1, 0, 1])]), { label: 'click' })).toThrow(
      /label column 'click' not found in t\.csv \(available: c, y\)/,
    );
  });
});

describe('scoreTable on the simulated world', () => {
  it('ranks every planted strong feature above every pure-noise feature by IV', () => {
    const world = simulateWorld({ seed: 11, rows: 100_000 });
    const report = scoreTable(flatToTable(world.flat), {
      label: 'click',
      time: 'ts',
      testFrom: world.groundTruth.testFrom,
      exclude: ['domain'],
    });
    const iv = new Map(report.features.map((f) => [f.name, f.iv]));
    const roles = world.groundTruth.features;
    const strong = roles.filter((f) => f.role === 'strong').map((f) => f.name);
    const noise = roles.filter((f) => f.role === 'noise').map((f) => f.name);
    const minStrong = Math.min(...strong.map((n) => iv.get(n)!));
    const maxNoise = Math.max(...noise.map((n) => iv.get(n)!));
    expect(minStrong).toBeGreaterThan(maxNoise);
    for (const f of report.features) {
      expect(f.iv).toBeGreaterThanOrEqual(0);
      expect(f.psi).toBeGreaterThanOrEqual(0);
    }
    for (let i = 1; i < report.features.length; i++) expect(report.features[i].iv).toBeLessThanOrEqual(report.features[i - 1].iv);
  });
});

describe('scoreTableAsync', () => {
  it('gives the same report as scoreTable and lets the event loop run between columns', async () => {
    const world = simulateWorld({ seed: 4, rows: 20_000 });
    const t = flatToTable(world.flat);
    const opts = { label: 'click', time: 'ts', testFrom: world.groundTruth.testFrom, exclude: ['domain'] };
    const cols = t.columns.length - 3;
    const ticks: number[] = [];
    let done = 0;
    // a timer that fires whenever the event loop gets a turn
    const timer = setInterval(() => ticks.push(done), 0);
    const seen: number[] = [];
    const r = await scoreTableAsync(t, opts, (d, of) => {
      done = d;
      seen.push(d);
      expect(of).toBe(cols);
    });
    clearInterval(timer);
    expect(r).toEqual(scoreTable(t, opts));
    expect(seen).toEqual(Array.from({ length: cols }, (_, i) => i + 1));
    // the timer ran while columns were still being scored
    expect(ticks.some((d) => d < cols)).toBe(true);
  });
});
