import { describe, expect, it } from 'vitest';
import { changesText, fmt, formatSaving, reportCharts } from './reports';

describe('report helpers', () => {
  const s = { newlyRemovable: 2, noLongerRemovable: 1, ivDrift: 0, psiDrift: 1, featuresAdded: 1 };
  it('summarizes the changes since the previous report', () => {
    expect(changesText(s, true)).toBe('+2 removable, −1 removable, 1 PSI drift, 1 new feature');
    expect(changesText({ ...s, newlyRemovable: 0, noLongerRemovable: 0, psiDrift: 0, featuresAdded: 0 }, true)).toBe('no change');
    expect(changesText(s, false)).toBe('first report');
    expect(changesText(null, true)).toBe('—');
  });

  it('draws the pruning curve and the shuffle drops from the report JSON, nothing from junk', () => {
    const charts = reportCharts({
      maxDrop: 0.001,
      curve: [{ round: 1, check: 'permutation', removed: 1, drop: 0.0002, ciLow: 0, ciHigh: 0.0004, accepted: true }],
      features: [
        { feature: 'noise', shuffleDrop: 0.0001, shuffleCi: [0, 0.0002], removable: true },
        { feature: 'strong', shuffleDrop: 0.1, shuffleCi: [0.09, 0.11], removable: false },
      ],
    });
    expect(charts.map((c) => c.title)).toEqual(['Pruning curve', 'AUC drop when a feature is shuffled']);
    expect(charts[1].kind === 'interval' && charts[1].rows.map((r) => r.group)).toEqual(['remove', 'keep']);
    expect(reportCharts(null)).toEqual([]);
    expect(reportCharts({ curve: 'x' })).toEqual([]);
  });

  it('formats savings and scores', () => {
    expect(formatSaving({ saved: 12, unit: 'bytes/entity', share: 0.25 })).toBe('12.00 bytes/entity (25.0%)');
    expect(formatSaving({ saved: 1234, unit: 'bytes/request', share: null })).toBe('1234 bytes/request');
    expect(fmt(null)).toBe('—');
    expect(fmt(0.123456)).toBe('0.1235');
  });
});
