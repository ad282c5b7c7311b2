import { describe, expect, it } from 'vitest';
import { changesLine } from './report.command';

const s = { features: 30, removable: 4, newlyRemovable: 2, noLongerRemovable: 1, ivDrift: 0, psiDrift: 1, featuresAdded: 0 };
const none = { ...s, newlyRemovable: 0, noLongerRemovable: 0, psiDrift: 0 };

describe('report list: the changes cell', () => {
  it('lists what moved since the previous report', () => {
    expect(changesLine(s, 'prev-id')).toBe('+2 removable, −1 removable, 1 PSI drift');
    expect(changesLine(none, 'prev-id')).toBe('no change');
  });

  it('says a model’s first report has nothing to compare with, instead of "no change"', () => {
    expect(changesLine(none, null)).toBe('first report');
    expect(changesLine(s, null)).toBe('first report');
  });

  it('is empty without a summary (a report still running or failed)', () => {
    expect(changesLine(null, null)).toBe('');
  });
});
