import { describe, expect, it } from 'vitest';
import {
  DEFAULT_CANDIDATES_PER_REQUEST,
  bestOf,
  bytesPerValue,
  computeShare,
  entityLevel,
  fanOut,
  ledgerEntry,
  ledgerFigure,
  medianInterval,
  pairedShare,
  spearman,
} from './cost-rules';
import { syntheticBatch } from './cost-meter';

describe('bytesPerValue', () => {
  it('numeric: a float32 whatever the stored width', () => {
    expect(bytesPerValue('numeric', 'DOUBLE', { rows: 10, nonNull: 10 })).toBe(4);
    expect(bytesPerValue('numeric', 'TINYINT', { rows: 10, nonNull: 3 })).toBe(4);
  });
  it('categorical: an int32 id for integer codes, the mean UTF-8 length for text', () => {
    expect(bytesPerValue('categorical', 'INTEGER', { rows: 10, nonNull: 10, distinct: 5 })).toBe(4);
    expect(bytesPerValue('categorical', 'VARCHAR', { rows: 10, nonNull: 10, meanTextBytes: 7.5 })).toBe(7.5);
  });
  it('multi-id: a 4-byte length prefix plus 4 bytes per id', () => {
    expect(bytesPerValue('multi_id', 'INTEGER[]', { rows: 10, nonNull: 10, meanListLength: 3.5 })).toBe(4 + 14);
    expect(bytesPerValue('multi_id', 'INTEGER[]', { rows: 10, nonNull: 0, meanListLength: 0 })).toBe(4);
  });
});

describe('entity level and fan-out', () => {
  it('a declared level wins over the key', () => {
    expect(entityLevel('item_id', 'user')).toBe('user');
    expect(entityLevel(null, 'item')).toBe('item');
  });
  it('reads the level off the entity key', () => {
    expect(entityLevel('item_id')).toBe('item');
    expect(entityLevel('sku')).toBe('item');
    expect(entityLevel('itemid')).toBe('item');
    expect(entityLevel('user_id')).toBe('user');
    expect(entityLevel('uid')).toBe('user');
    expect(entityLevel('context_id')).toBe('context');
    expect(entityLevel('session_id')).toBe('context');
    expect(entityLevel('shard')).toBeNull();
    expect(entityLevel(null)).toBeNull();
  });
  it('item features are fetched once per candidate, the rest once per request', () => {
    expect(fanOut('item', 100)).toBe(100);
    expect(fanOut('user', 100)).toBe(1);
    expect(fanOut('context', 7)).toBe(1);
    expect(fanOut(null, 7)).toBe(1);
  });
});

describe('compute share', () => {
  it('is the time the feature adds, as a share of the full forward, clipped to [0, 1]', () => {
    expect(computeShare(10, 8)).toBeCloseTo(0.2);
    expect(computeShare(10, 11)).toBe(0);
    expect(computeShare(10, 0)).toBe(1);
    expect(computeShare(0, 0)).toBe(0);
  });
  it('takes the best of the repeats and reports their spread', () => {
    expect(bestOf([12, 10, 11])).toEqual({ best: 10, spread: 0.2 });
    expect(() => bestOf([])).toThrow();
  });
});

describe('the ledger figure', () => {
  const measured = { value: 8, measuredAt: '2026-01-01T00:00:00.000Z', how: 'mean 8.0 bytes' };
  it('a declared figure overrides a measured one; both are kept', () => {
    const f = ledgerFigure(
      { storageBytesPerEntity: 20, source: 'declared', declaredAt: 'D', measured: { storage: measured } },
      'storage',
    );
    expect(f).toMatchObject({ value: 20, source: 'declared', declared: 20, measured, measuredAt: 'D', unit: 'bytes/entity' });
  });
  it('a measured figure stands when nothing is declared', () => {
    expect(ledgerFigure({ measured: { storage: measured } }, 'storage')).toMatchObject({
      value: 8,
      source: 'measured',
      declared: null,
    });
  });
  it('legacy figures stored as measured count as measured', () => {
    expect(ledgerFigure({ computeCost: 3, source: 'measured' }, 'compute')).toMatchObject({
      value: 3,
      source: 'measured',
      declared: null,
    });
  });
  it('nothing at all: no figure', () => {
    expect(ledgerFigure({}, 'compute')).toMatchObject({ value: null, source: null });
  });
  it('communication is measured storage times the fan-out at the given candidates per request', () => {
    const base = { id: 'x', name: 'i_price', businessLine: 'feed', kind: 'numeric' as const };
    const item = ledgerEntry({ ...base, entityKey: 'item_id', costs: { measured: { storage: { ...measured, value: 4 } } } }, 50);
    expect(item.communication).toMatchObject({ value: 200, source: 'measured' });
    expect(item.communication.measured?.fanOut).toBe(50);
    const user = ledgerEntry({ ...base, entityKey: 'user_id', costs: { measured: { storage: { ...measured, value: 4 } } } });
    expect(user.communication.value).toBe(4);
    expect(ledgerEntry({ ...base, entityKey: 'item_id', costs: { measured: { storage: measured } } }).communication.value).toBe(
      8 * DEFAULT_CANDIDATES_PER_REQUEST,
    );
  });
  it('a feature without any figure is marked as such', () => {
    const e = ledgerEntry({
      id: 'x',
      name: 'f',
      businessLine: 'feed',
      kind: 'numeric',
      entityKey: null,
      costs: { source: 'declared' },
    });
    expect(e.noCost).toBe(true);
  });
});

describe('syntheticBatch', () => {
  it('gives each input its column: numerics, single ids, lists of the measured length', () => {
    const d = syntheticBatch(
      [
        { name: 'a', kind: 'numeric' },
        { name: 'b', kind: 'categorical', vocab: 10 },
        { name: 'c', kind: 'multi_id', vocab: 50, listLength: 3.4 },
      ],
      100,
    );
    expect(d.numericNames).toEqual(['a']);
    expect(d.numeric.length).toBe(100);
    expect(d.slots.map((s) => [s.name, s.ids.length, s.offsets[100]])).toEqual([
      ['b', 100, 100],
      ['c', 300, 300],
    ]);
    expect(Math.max(...d.slots[0]!.ids)).toBeLessThan(10);
  });
});

describe('compute shares from paired timings', () => {
  it('gives the median and its order-statistic interval with its exact coverage', () => {
    const nine = medianInterval([9, 1, 8, 2, 7, 3, 6, 4, 5]);
    expect(nine).toMatchObject({ median: 5, low: 2, high: 8 });
    expect(nine.coverage).toBeCloseTo(1 - 2 * (10 / 512), 12); // 96.1 %
    const five = medianInterval([5, 1, 4, 2, 3]);
    expect(five).toMatchObject({ median: 3, low: 1, high: 5 });
    expect(five.coverage).toBeCloseTo(1 - 2 / 32, 12); // 93.8 %
    expect(medianInterval([2, 4]).median).toBe(3);
  });

  it('reports a share clear of the A/A noise floor, and one inside it as below resolution (0)', () => {
    const all = [10, 10.2, 9.9, 10.1, 10, 10.3, 9.8, 10, 10.1];
    const aa: [number, number][] = all.map((a, r) => [a, a * (1 + (r % 2 ? 0.01 : -0.01))]);
    // 20 % of the forward: well above the 1 % noise floor
    const big = pairedShare(
      all,
      all.map((a) => a * 0.8),
      aa,
    );
    expect(big.belowResolution).toBe(false);
    expect(big.share).toBeCloseTo(0.2, 9);
    expect(big.resolution).toBeCloseTo(0.01, 9);
    expect(big.ciLow).toBeGreaterThan(0);
    // 0.5 % of the forward: inside the noise floor, so 0
    const small = pairedShare(
      all,
      all.map((a) => a * 0.995),
      aa,
    );
    expect(small.median).toBeCloseTo(0.005, 9);
    expect(small.belowResolution).toBe(true);
    expect(small.share).toBe(0);
    // an interval that reaches 0 is below resolution too, whatever the median
    const mixed = pairedShare([10, 10, 10, 10, 10], [8, 8, 8, 10.5, 8], [[10, 10]]);
    expect(mixed.median).toBeCloseTo(0.2, 9);
    expect(mixed.ciLow).toBeLessThan(0);
    expect(mixed.belowResolution).toBe(true);
  });

  it("ranks by Spearman's rho, ties sharing their mean rank", () => {
    expect(spearman([1, 2, 3, 4], [10, 20, 30, 40])).toBeCloseTo(1, 12);
    expect(spearman([1, 2, 3, 4], [4, 3, 2, 1])).toBeCloseTo(-1, 12);
    expect(spearman([0, 0, 0.2, 0.5], [0, 0, 0.3, 0.4])).toBeCloseTo(1, 12);
    expect(spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])).toBeCloseTo(0.8, 12);
  });
});

describe('a compute share from one round', () => {
  it('is its one pair, with an interval of that value alone (coverage 0)', () => {
    expect(medianInterval([0.2])).toEqual({ median: 0.2, low: 0.2, high: 0.2, coverage: 0 });
    const one = pairedShare([10], [8], [[10, 10]]);
    expect(one).toMatchObject({ median: expect.closeTo(0.2, 9), resolution: 0, belowResolution: false });
  });
});
