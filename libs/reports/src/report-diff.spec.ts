import { describe, expect, it } from 'vitest';
import { countOnProfile, profileColumn, profileCounts, type FeatureProfile } from './feature-profile';
import { diffReports, type PreviousSnapshot } from './report-diff';

const T = { psi: 0.1, ivDrift: 0.02 };

function prevSnapshot(profiles: Record<string, FeatureProfile> = {}): PreviousSnapshot {
  return {
    id: 'prev',
    generatedAt: '2026-11-16T06:00:00.000Z',
    removable: ['noise', 'old_a'],
    iv: { strong: 0.5, weak: 0.05, noise: 0.001, old_a: 0.002, gone: 0.3 },
    profiles,
  };
}

describe('diffReports', () => {
  it('a first report has nothing to compare with', () => {
    const d = diffReports(
      null,
      { removable: ['x'], iv: { x: 0.1 }, countsOnPrevious: {} },
      [{ name: 'x', createdAt: new Date() }],
      T,
    );
    expect(d).toMatchObject({
      previousReportId: null,
      newlyRemovable: [],
      noLongerRemovable: [],
      ivDrift: [],
      psi: [],
      featuresAdded: [],
    });
  });

  it('newly and no longer removable features, IV drift beyond the threshold only', () => {
    const d = diffReports(
      prevSnapshot(),
      // strong 0.5 -> 0.45 (drift 0.05), weak 0.05 -> 0.06 (0.01: below), noise unchanged; gone is not in this report
      { removable: ['noise', 'weak'], iv: { strong: 0.45, weak: 0.06, noise: 0.001, old_a: null }, countsOnPrevious: {} },
      [],
      T,
    );
    expect(d.previousReportId).toBe('prev');
    expect(d.newlyRemovable).toEqual(['weak']);
    expect(d.noLongerRemovable).toEqual(['old_a']);
    expect(d.ivDrift).toHaveLength(1);
    expect(d.ivDrift[0].feature).toBe('strong');
    expect(d.ivDrift[0].change).toBeCloseTo(-0.05, 12);
  });

  it('PSI over the previous report’s bins with known values; drift at or above the threshold', () => {
    const half: FeatureProfile = { kind: 'numeric', edges: [0], counts: [50, 50], missing: 0 };
    const prev = prevSnapshot({
      shifted: half,
      stable: half,
      recoded: { kind: 'categorical', values: ['a'], counts: [10], other: 0, missing: 0 },
    });
    const d = diffReports(
      prev,
      {
        removable: [],
        iv: {},
        // shifted: 25/75 against 50/50 (the missing bin is empty on both sides, so skipped)
        countsOnPrevious: { shifted: [25, 75, 0], stable: [50, 50, 0], recoded: null },
      },
      [],
      T,
    );
    // (0.25-0.5) ln(0.25/0.5) + (0.75-0.5) ln(0.75/0.5)
    const expected = 0.25 * Math.log(2) + 0.25 * Math.log(1.5);
    expect(d.psi.find((p) => p.feature === 'shifted')!.psi).toBeCloseTo(expected, 12);
    expect(expected).toBeCloseTo(0.27465, 5);
    expect(d.psi.find((p) => p.feature === 'stable')!.psi).toBe(0);
    expect(d.psi.map((p) => p.feature)).toEqual(['shifted', 'stable']);
    expect(d.psiDrift).toEqual(['shifted']);
  });

  it('a bin empty on one side is smoothed (0.5 per bin), as the score workflow does', () => {
    const prev = prevSnapshot({ f: { kind: 'numeric', edges: [0], counts: [100, 0], missing: 0 } });
    const d = diffReports(prev, { removable: [], iv: {}, countsOnPrevious: { f: [50, 50, 0] } }, [], T);
    const e = [100.5 / 101, 0.5 / 101];
    const a = [50.5 / 101, 50.5 / 101];
    const want = (a[0] - e[0]) * Math.log(a[0] / e[0]) + (a[1] - e[1]) * Math.log(a[1] / e[1]);
    expect(d.psi[0].psi).toBeCloseTo(want, 12);
  });

  it('features added to the registry after the previous report, oldest first', () => {
    const d = diffReports(
      prevSnapshot(),
      { removable: [], iv: {}, countsOnPrevious: {} },
      [
        { name: 'before', createdAt: '2026-11-10T00:00:00Z' },
        { name: 'new_b', createdAt: '2026-11-20T00:00:00Z' },
        { name: 'new_a', createdAt: new Date('2026-11-18T00:00:00Z') },
      ],
      T,
    );
    expect(d.featuresAdded.map((f) => f.name)).toEqual(['new_a', 'new_b']);
  });
});

describe('feature profiles', () => {
  it('numeric: decile cut points, missing apart; another sample binned on those cut points', () => {
    const values = Float64Array.from({ length: 100 }, (_, i) => i);
    values[0] = NaN;
    const p = profileColumn({ name: 'x', kind: 'numeric', duckdbType: 'DOUBLE', values });
    expect(p.kind).toBe('numeric');
    if (p.kind !== 'numeric') return;
    expect(p.edges).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90]);
    expect(profileCounts(p)).toEqual([9, 10, 10, 10, 10, 10, 10, 10, 10, 10, 1]);
    // everything moved up by 50: the lower half empties
    const later = Float64Array.from({ length: 100 }, (_, i) => 50 + i / 2);
    expect(countOnProfile(p, { name: 'x', kind: 'numeric', duckdbType: 'DOUBLE', values: later })).toEqual([
      0, 0, 0, 0, 0, 20, 20, 20, 20, 20, 0,
    ]);
  });

  it('categorical: top values, other and missing; a kind change gives no counts', () => {
    const col = {
      name: 'c',
      kind: 'categorical' as const,
      duckdbType: 'VARCHAR',
      dictionary: ['a', 'b', 'c'],
      codes: Int32Array.from([0, 0, 0, 1, 1, 2, -1]),
    };
    const p = profileColumn(col, 10, 2);
    expect(p).toEqual({ kind: 'categorical', values: ['a', 'b'], counts: [3, 2], other: 1, missing: 1 });
    const later = { ...col, dictionary: ['c', 'a', 'z'], codes: Int32Array.from([0, 1, 2, 2]) };
    expect(countOnProfile(p, later)).toEqual([1, 0, 3, 0]);
    expect(countOnProfile(p, { name: 'c', kind: 'numeric', duckdbType: 'DOUBLE', values: new Float64Array(1) })).toBeNull();
  });

  it('multi-id: id occurrences, empty lists as missing', () => {
    const col = {
      name: 'm',
      kind: 'multi_id' as const,
      duckdbType: 'INTEGER[]',
      offsets: Int32Array.from([0, 2, 2, 5]),
      ids: Int32Array.from([1, 2, 1, 1, 3]),
    };
    expect(profileColumn(col, 10, 2)).toEqual({ kind: 'multi_id', values: [1, 2], counts: [3, 1], other: 1, missing: 1 });
  });
});
