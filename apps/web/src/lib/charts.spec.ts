import { describe, expect, it } from 'vitest';
import {
  addCharts,
  labelColumn,
  LABEL_CHAR_PX,
  LABEL_CHARS,
  wrapLabel,
  chartsFor,
  divideCharts,
  groupClass,
  linearScale,
  multiplyCharts,
  scoreCharts,
  subtractCharts,
  ticks,
  woeBins,
  woeChart,
  type BarChart,
  type IntervalChart,
  type ScatterChart,
} from './charts';

const point = (features: number, storage: number, auc: number, liftKept: number) => ({
  features,
  selected: [],
  estimatedValue: 0,
  costFractions: { storage, communication: storage, compute: storage },
  auc,
  aucPerSeed: [auc],
  seedSpread: 0.002,
  liftKept,
});

describe('multiplyCharts', () => {
  it('one interval row per strategy × source, verdict as its group, a line at 0', () => {
    const [c, ...more] = multiplyCharts({
      results: [
        { strategy: 'pool', sources: ['a'], deltaAuc: { delta: 0.01, ciLow: 0.005, ciHigh: 0.015 }, verdict: 'recommend' },
        {
          strategy: 'finetune',
          sources: ['a', 'b'],
          deltaAuc: { delta: -0.01, ciLow: -0.02, ciHigh: -0.001 },
          verdict: 'harmful',
        },
      ],
    }) as IntervalChart[];
    expect(more).toHaveLength(0);
    expect(c!.rows).toEqual([
      { label: 'pool · a', value: 0.01, low: 0.005, high: 0.015, group: 'recommend' },
      { label: 'finetune · a + b', value: -0.01, low: -0.02, high: -0.001, group: 'harmful' },
    ]);
    expect(c!.refs).toEqual([{ value: 0, label: '0' }]);
  });
  it('a result that names its splits: the validation ΔAUC the verdict read, then the test ΔAUC reported', () => {
    const [c] = multiplyCharts({
      splits: { decisions: 'validation', reported: 'test' },
      results: [
        {
          strategy: 'union',
          sources: ['feed'],
          deltaAuc: { split: 'test', delta: 0.004, ciLow: -0.001, ciHigh: 0.009 },
          validation: { split: 'validation', delta: 0.01, ciLow: 0.005, ciHigh: 0.015 },
          verdict: 'recommend',
        },
      ],
    }) as IntervalChart[];
    expect(c!.rows).toEqual([
      { label: 'union · feed (validation)', value: 0.01, low: 0.005, high: 0.015, group: 'recommend' },
      { label: 'union · feed (test)', value: 0.004, low: -0.001, high: 0.009, group: 'recommend' },
    ]);
  });
  it('skips rows without a ΔAUC and keeps those without an interval', () => {
    const cs = multiplyCharts({ results: [{ strategy: 'pool' }, { strategy: 'x', deltaAuc: { delta: 0.1 } }, 'junk', null] });
    expect((cs[0] as IntervalChart).rows).toEqual([{ label: 'x · ?', value: 0.1, low: null, high: null, group: 'unknown' }]);
  });
});

describe('divideCharts', () => {
  const result = {
    frontier: [
      { tier: 1, alias: 'tier-1', milp: point(3, 0.5, 0.7, 0.8), greedy: point(2, 0.4, 0.68, 0.72) },
      { tier: 2, alias: 'tier-2', milp: point(2, 0.25, 0.65, 0.6), greedy: { auc: 'n/a' } },
    ],
  };
  it('milp and greedy points per tier at the mean cost, and the full model at 1 from the lift kept', () => {
    const [c] = divideCharts(result) as ScatterChart[];
    expect(c!.points.map((p) => [p.series, p.label, p.x, p.y])).toEqual([
      ['milp', 'tier-1', 0.5, 0.7],
      ['greedy', 'tier-1', expect.closeTo(0.4, 10), 0.68],
      ['milp', 'tier-2', 0.25, 0.65],
      ['full model', 'full', 1, expect.closeTo(0.75, 10)],
    ]);
    expect(c!.points[0]!.low).toBeCloseTo(0.699);
    expect(c!.lines).toEqual(['milp', 'greedy']);
  });
  it('one chosen resource as the cost', () => {
    const r = {
      frontier: [
        { tier: 1, milp: { ...point(1, 0.5, 0.7, 0), costFractions: { storage: 0.1, communication: 0.2, compute: 0.9 } } },
      ],
    };
    const [c] = divideCharts(r, 'compute') as ScatterChart[];
    expect(c!.points).toHaveLength(1); // no lift kept > 0: no full model
    expect(c!.points[0]!.x).toBe(0.9);
    expect(c!.points[0]!.label).toBe('tier-1');
  });
});

describe('subtractCharts', () => {
  it('the pruning curve by check and acceptance, max drop as a line, and shuffle drops per feature', () => {
    const [curve, bars] = subtractCharts({
      maxDrop: 0.005,
      curve: [
        { round: 1, check: 'permutation', removed: 2, added: ['a', 'b'], drop: 0.001, ciLow: 0, ciHigh: 0.002, accepted: true },
        { round: 2, check: 'retrain', removed: 2, added: [], drop: 0.002, ciLow: null, ciHigh: null, accepted: true },
        {
          round: 3,
          check: 'permutation',
          removed: 4,
          added: ['c', 'd'],
          drop: 0.01,
          ciLow: 0.008,
          ciHigh: 0.012,
          accepted: false,
        },
      ],
      perFeature: [
        { feature: 'a', shuffleDrop: 0.0001, shuffleCi: [-0.0001, 0.0003], removable: true },
        { feature: 'c', shuffleDrop: 0.02, shuffleCi: null, removable: false },
        { feature: 'z', shuffleDrop: null },
      ],
    }) as [ScatterChart, IntervalChart];
    expect(curve.points.map((p) => p.series)).toEqual(['estimated · accepted', 'retrained · accepted', 'estimated · rejected']);
    expect(curve.points[1]!.low).toBeNull();
    expect(curve.refs.map((r) => r.value)).toEqual([0, 0.005]);
    expect(curve.xIntegers).toBe(true);
    expect(bars.rows).toEqual([
      { label: 'a', value: 0.0001, low: -0.0001, high: 0.0003, group: 'remove' },
      { label: 'c', value: 0.02, low: null, high: null, group: 'keep' },
    ]);
  });
  it('an old result with only a per-feature list gets only the bars', () => {
    const cs = subtractCharts({ perFeature: [{ feature: 'a', shuffleDrop: 0.1 }] });
    expect(cs.map((c) => c.kind)).toEqual(['interval']);
  });
});

describe('addCharts', () => {
  it('contribution and leave-one-in per candidate against 0 and minGain', () => {
    const [c] = addCharts({
      minGain: -0.001,
      candidates: [
        {
          feature: 'x',
          contribution: { mean: 0.01, ciLow: 0.002, ciHigh: 0.02 },
          leaveOneIn: { delta: 0.012, ciLow: 0.001, ciHigh: 0.02 },
          verdict: 'adopt',
        },
        { feature: 'y', contribution: { mean: -0.01, ciLow: -0.02, ciHigh: -0.005 }, leaveOneIn: null, verdict: 'reject' },
      ],
    }) as IntervalChart[];
    expect(c!.rows.map((r) => [r.label, r.group])).toEqual([
      ['x contribution', 'adopt'],
      ['x leave-one-in', 'adopt'],
      ['y contribution', 'reject'],
    ]);
    expect(c!.refs).toEqual([
      { value: 0, label: '0' },
      { value: -0.001, label: 'minGain' },
    ]);
  });

  it('names the split of results that carry one', () => {
    const [c] = addCharts({
      candidates: [
        {
          feature: 'x',
          contribution: { split: 'test', mean: 0.01, ciLow: 0.002, ciHigh: 0.02 },
          leaveOneIn: { split: 'validation', delta: 0.012, ciLow: 0.001, ciHigh: 0.02 },
          verdict: 'adopt',
        },
      ],
    }) as IntervalChart[];
    expect(c!.rows.map((r) => r.label)).toEqual(['x contribution (test)', 'x leave-one-in (validation)']);
  });
});

describe('chartsFor', () => {
  it('passes the chosen cost axis to divide', () => {
    const r = { frontier: [{ tier: 1, milp: { auc: 0.7, costFractions: { storage: 0.1, communication: 0.2, compute: 0.6 } } }] };
    expect((chartsFor('divide', r, 'storage')[0] as ScatterChart).points[0]!.x).toBe(0.1);
    expect((chartsFor('divide', r)[0] as ScatterChart).points[0]!.x).toBeCloseTo(0.3);
  });
  it('no charts for a missing, malformed or partial result, for any kind', () => {
    for (const kind of ['multiply', 'divide', 'subtract', 'add', 'score', 'nope']) {
      for (const r of [
        null,
        undefined,
        42,
        'x',
        [],
        {},
        { results: 3, frontier: {}, curve: 'x', perFeature: [1], candidates: [null] },
      ]) {
        expect(chartsFor(kind, r)).toEqual([]);
      }
    }
  });
  it('never throws, even on getters that throw', () => {
    const evil = Object.defineProperty({}, 'results', {
      get: () => {
        throw new Error('boom');
      },
      enumerable: true,
    });
    expect(chartsFor('multiply', evil)).toEqual([]);
  });
});

describe('scales', () => {
  it('linearScale maps the padded domain onto the range and widens a single value', () => {
    const { scale, domain } = linearScale([0, 10], [0, 110], 0.05);
    expect(domain).toEqual([-0.5, 10.5]);
    expect(scale(-0.5)).toBe(0);
    expect(scale(10.5)).toBe(110);
    expect(linearScale([3], [0, 1], 0).domain).toEqual([1.5, 4.5]);
    expect(linearScale([], [0, 1], 0).domain).toEqual([0, 1]);
  });
  it('ticks are round numbers inside the domain', () => {
    expect(ticks([0, 1])).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(ticks([-0.013, 0.021], 4)).toEqual([-0.01, 0, 0.01, 0.02]);
    expect(ticks([1, 1])).toEqual([]);
    expect(ticks([0.9, 3.1], 5, true)).toEqual([1, 2, 3]);
    expect(ticks([0, 40], 5, true)).toEqual([0, 10, 20, 30, 40]);
  });
  it('groupClass makes a class-safe token', () => {
    expect(groupClass('no gain')).toBe('no-gain');
    expect(groupClass('estimated · accepted')).toBe('estimated-accepted');
    expect(groupClass('!!')).toBe('other');
  });
});

describe('scoreCharts', () => {
  it('one bar per ranked feature, its strength as the group, the IV cut points as references', () => {
    const [c, ...more] = scoreCharts({
      ranking: [
        { rank: 1, feature: 'strong', iv: 0.41, strength: 'strong', psi: 0.012 },
        { rank: 2, feature: 'noise', iv: 0.001, strength: 'useless', psi: null },
        { rank: 3, feature: 'broken', iv: 'n/a', strength: 'weak' },
      ],
    }) as BarChart[];
    expect(more).toHaveLength(0);
    expect(c!.kind).toBe('bars');
    expect(c!.rows.map((r) => [r.label, r.value, r.group])).toEqual([
      ['strong', 0.41, 'strong'],
      ['noise', 0.001, 'useless'],
    ]);
    expect(c!.rows[0]!.note).toBe('PSI 0.0120');
    expect(c!.refs.map((r) => r.value)).toEqual([0.02, 0.1, 0.3]);
    expect(chartsFor('score', { ranking: [] })).toEqual([]);
    expect(chartsFor('score', null)).toEqual([]);
  });
});

describe('woeBins and woeChart', () => {
  const details = {
    kind: 'numeric',
    bins: [
      { range_or_values: '[-inf, 0.5)', count: 300, events: 30, woe: -0.4, iv: 0.03 },
      { range_or_values: ['a', 'b'], count: 100, events: 40, woe: 0.9, iv: 0.12 },
      { range_or_values: 'Missing', count: 'x', events: 1, woe: 0.1, iv: 0 },
    ],
  };
  it('reads the stored bins, joins pooled categories and drops unusable bins', () => {
    expect(woeBins(details)).toEqual([
      { label: '[-inf, 0.5)', count: 300, events: 30, woe: -0.4, iv: 0.03 },
      { label: 'a, b', count: 100, events: 40, woe: 0.9, iv: 0.12 },
    ]);
    expect(woeBins(null)).toEqual([]);
    expect(woeBins({ bins: 'no' })).toEqual([]);
    expect(woeBins({ bins: [{ range_or_values: 'x'.repeat(60), count: 1, events: 0, woe: 0 }] })[0]!.label).toHaveLength(40);
  });
  it('a bar per bin, signed by WOE, with its share of rows and event rate in the note', () => {
    const c = woeChart('f', woeBins(details))!;
    expect(c.title).toBe('WOE per bin of f');
    expect(c.rows.map((r) => [r.label, r.value, r.group])).toEqual([
      ['[-inf, 0.5)', -0.4, 'negative WOE'],
      ['a, b', 0.9, 'positive WOE'],
    ]);
    expect(c.rows[0]!.note).toBe('75.0% of rows, event rate 10.00%, IV term 0.0300');
    expect(woeChart('f', [])).toBeNull();
  });
});

describe('subtractCharts IV bars', () => {
  it('adds the per-feature IV as bars, remove/keep as the group', () => {
    const charts = subtractCharts({
      perFeature: [
        { feature: 'a', iv: 0.01, shuffleDrop: null, removable: true },
        { feature: 'b', iv: 0.2, shuffleDrop: null, removable: false },
        { feature: 'c', iv: null, shuffleDrop: null, removable: false },
      ],
    });
    expect(charts).toHaveLength(1);
    const bars = charts[0] as BarChart;
    expect(bars.kind).toBe('bars');
    expect(bars.rows.map((r) => [r.label, r.group])).toEqual([
      ['a', 'remove'],
      ['b', 'keep'],
    ]);
  });
});

describe('row labels of a chart', () => {
  it('wrap at spaces into lines of at most the width, long words cut, short labels untouched', () => {
    expect(wrapLabel('strong', 10)).toEqual(['strong']);
    expect(wrapLabel('pretrain_finetune · other/mw17-other (validation)', 20)).toEqual([
      'pretrain_finetune ·',
      'other/mw17-other',
      '(validation)',
    ]);
    expect(wrapLabel('a_very_long_single_word_label', 10)).toEqual(['a_very_lon', 'g_single_w', 'ord_label']);
    expect(wrapLabel('', 10)).toEqual(['']);
    for (const label of ['union · feed/feed-samples + search/search-samples (test)', 'x'.repeat(95), 'a b  c']) {
      const lines = wrapLabel(label, 16);
      expect(lines.every((l) => l.length <= 16)).toBe(true);
      expect(lines.join(' ').replace(/ /g, '')).toBe(label.replace(/ /g, ''));
    }
  });

  it('size the label column to the longest line, up to LABEL_CHARS characters', () => {
    const short = labelColumn(['a', 'bb']);
    expect(short.width).toBe(Math.ceil(6 * LABEL_CHAR_PX) + 12);
    const long = labelColumn(['pretrain_finetune · other/mw17-other + search/search-samples (validation)']);
    expect(long.lines[0].length).toBeGreaterThan(1);
    expect(Math.max(...long.lines[0].map((l) => l.length))).toBeLessThanOrEqual(LABEL_CHARS);
    expect(long.width).toBeLessThanOrEqual(Math.ceil(LABEL_CHARS * LABEL_CHAR_PX) + 12);
  });
});
