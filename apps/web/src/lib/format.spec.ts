import { describe, expect, it } from 'vitest';
import {
  flattenForTable,
  formatCount,
  formatDateTime,
  formatProgress,
  formatRange,
  formatRate,
  formatSharing,
  formatTimeRange,
  formatTimeValue,
  formatVersion,
  isTerminal,
  pageCount,
  splitRecordTables,
  summarizeKinds,
} from './format';

describe('web formatting helpers', () => {
  it('progress: whole percent, clamped, a dash for nonsense', () => {
    expect(formatProgress(0)).toBe('0%');
    expect(formatProgress(0.424)).toBe('42%');
    expect(formatProgress(0.995)).toBe('100%');
    expect(formatProgress(1.7)).toBe('100%');
    expect(formatProgress(-0.2)).toBe('0%');
    expect(formatProgress(NaN)).toBe('—');
  });

  it('terminal statuses', () => {
    expect(['succeeded', 'failed', 'cancelled'].every(isTerminal)).toBe(true);
    expect(isTerminal('queued') || isTerminal('running')).toBe(false);
  });

  it('counts with thousands separators; dates in UTC to the minute', () => {
    expect(formatCount(1234567)).toBe('1,234,567');
    expect(formatCount(0)).toBe('0');
    expect(formatCount(null)).toBe('—');
    expect(formatDateTime('2026-11-23T03:49:38.123Z')).toBe('2026-11-23 03:49 UTC');
    expect(formatDateTime(null)).toBe('—');
    expect(formatDateTime('not a date')).toBe('not a date');
  });

  it('time values: epoch seconds and milliseconds as dates, anything else as the number', () => {
    expect(formatTimeValue(1_700_000_000)).toBe('2023-11-14 22:13 UTC');
    expect(formatTimeValue(1_700_000_000_000)).toBe('2023-11-14 22:13 UTC');
    expect(formatTimeValue(1299)).toBe('1299');
    expect(formatTimeValue(2.5)).toBe('2.50000');
    expect(formatTimeValue(null)).toBe('—');
    expect(formatTimeRange('ts', 1000, 1299)).toBe('ts: 1000 → 1299');
    expect(formatTimeRange(null, null, null)).toBe('no time column');
  });

  it('event rate, sharing policy, version, kinds', () => {
    expect(formatRate({ events: 25, nonEvents: 75 })).toBe('0.2500');
    expect(formatRate({ events: 0, nonEvents: 0 })).toBe('—');
    expect(formatRate(null)).toBe('—');
    expect(formatSharing([])).toBe('private (own line only)');
    expect(formatSharing(['*'])).toBe('shared with all lines');
    expect(formatSharing(['mall', 'search'])).toBe('shared with mall, search');
    expect(formatVersion('sha256:0123456789abcdef')).toBe('sha256:0123456789abcdef');
    expect(formatVersion(null)).toBe('unknown');
    expect(summarizeKinds([{ kind: 'numeric' }, { kind: 'categorical' }, { kind: 'numeric' }, { kind: 'boolean' }])).toBe(
      '2 numeric, 1 boolean, 1 categorical',
    );
    expect(summarizeKinds([])).toBe('');
  });

  it('pages and ranges', () => {
    expect(pageCount(0, 20)).toBe(1);
    expect(pageCount(20, 20)).toBe(1);
    expect(pageCount(21, 20)).toBe(2);
    expect(formatRange(1, 20, 53)).toBe('1–20 of 53');
    expect(formatRange(3, 20, 53)).toBe('41–53 of 53');
    expect(formatRange(1, 20, 0)).toBe('0 of 0');
  });

  it('flattens JSON into key/value rows: dotted keys, scalar arrays joined, object arrays indexed', () => {
    const { rows, truncated } = flattenForTable({
      sampleSet: 'demo-feed',
      model: { arch: 'lr', epochs: 3, tags: ['a', 'b'] },
      features: [{ name: 'x' }, { name: 'y' }],
      empty: {},
      none: null,
      list: [],
      on: true,
    });
    expect(truncated).toBe(false);
    expect(rows).toEqual([
      ['sampleSet', 'demo-feed'],
      ['model.arch', 'lr'],
      ['model.epochs', '3'],
      ['model.tags', 'a, b'],
      ['features.0.name', 'x'],
      ['features.1.name', 'y'],
      ['empty', '{}'],
      ['none', 'null'],
      ['list', '[]'],
      ['on', 'true'],
    ]);
    expect(flattenForTable(7).rows).toEqual([['(value)', '7']]);
    const many = flattenForTable(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, i])), 4);
    expect(many.rows).toHaveLength(4);
    expect(many.truncated).toBe(true);
  });
});

describe('lists of records as tables', () => {
  it('takes top-level lists of flat records out as tables, columns in first-seen order', () => {
    const { rest, tables } = splitRecordTables({
      trials: 1,
      ranking: [
        { feature: 'strong', iv: 2.37, tags: ['a', 'b'] },
        { feature: 'color', iv: 0.05, kind: 'categorical' },
      ],
      nested: [{ deep: { x: 1 } }],
      empty: [],
    });
    expect(rest).toEqual({ trials: 1, nested: [{ deep: { x: 1 } }], empty: [] });
    expect(tables).toEqual([
      {
        key: 'ranking',
        columns: ['feature', 'iv', 'tags', 'kind'],
        rows: [
          ['strong', '2.37', 'a, b', ''],
          ['color', '0.05', '', 'categorical'],
        ],
        more: 0,
      },
    ]);
  });

  it('caps the rows and counts the rest; leaves non-objects alone', () => {
    const t = splitRecordTables({ r: Array.from({ length: 5 }, (_, i) => ({ i })) }, 2).tables[0];
    expect(t.rows).toEqual([['0'], ['1']]);
    expect(t.more).toBe(3);
    expect(splitRecordTables([1, 2])).toEqual({ rest: [1, 2], tables: [] });
    expect(splitRecordTables(null)).toEqual({ rest: null, tables: [] });
  });
});
