import { describe, expect, it } from 'vitest';
import {
  DEFAULT_CANDIDATES_PER_REQUEST,
  bestOf,
  bytesPerValue,
  computeShare,
  computeUnits,
  entityLevel,
  fitComputeModel,
  fanOut,
  ledgerEntry,
  ledgerFigure,
  medianInterval,
  pairedShare,
  spearman,
  type ComputeDesign,
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

describe('the fitted compute cost model', () => {
  // a world whose true costs are known: numeric 0.4 %, slot 3 %, lookup 1.5 % a id, no cache effect,
  // intercept 15 %; each design's ratio carries Gaussian noise of 2 %
  const inputs = [
    ...Array.from({ length: 12 }, () => ({ kind: 'numeric' as const })),
    ...[50, 2_000, 30, 90_000, 7].map((vocab) => ({ kind: 'categorical' as const, vocab })),
    ...[
      [5_000, 4],
      [300, 9],
      [60_000, 2],
    ].map(([vocab, listLength]) => ({ kind: 'multi_id' as const, vocab, listLength })),
  ];
  const units = inputs.map(computeUnits);
  const truth = (i: number) => 0.004 * units[i]!.numeric + 0.03 * units[i]!.slot + 0.015 * units[i]!.lookup;
  const scale = 1 / (0.15 + inputs.reduce((s, _, i) => s + truth(i), 0));
  function designs(seed: number, n: number, noise: number): ComputeDesign[] {
    let a = seed;
    const r = () => (a = (a * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const gauss = () => Math.sqrt(-2 * Math.log(Math.max(r(), 1e-12))) * Math.cos(2 * Math.PI * r());
    return Array.from({ length: n }, () => {
      const members = inputs.map((_, i) => i).filter(() => r() < 0.5);
      const ratio = (0.15 + members.reduce((s, i) => s + truth(i), 0)) * scale;
      return { members, ratio: ratio * (1 + noise * gauss()) };
    });
  }

  it("recovers each input's share within its interval and ranks inputs as their structure does, run after run", () => {
    const fits = [1, 2, 3].map((seed) => fitComputeModel(units, designs(seed, 40, 0.02), { seed }));
    for (const fit of fits) {
      expect(Math.abs(fit.coef.cache)).toBeLessThan(0.01); // none planted: dropped, or small
      expect(fit.r2).toBeGreaterThan(0.8);
      inputs.forEach((_, i) => {
        const p = fit.perInput[i]!;
        expect(p.ciLow).toBeLessThanOrEqual(p.share);
        expect(p.ciHigh).toBeGreaterThanOrEqual(p.share);
        expect(Math.abs(p.share - truth(i) * scale)).toBeLessThan(0.02);
      });
    }
    const shares = fits.map((f) => f.perInput.map((p) => p.share));
    expect(spearman(shares[0]!, shares[1]!)).toBeGreaterThan(0.9);
    expect(spearman(shares[1]!, shares[2]!)).toBeGreaterThan(0.9);
    expect(
      spearman(
        shares[0]!,
        inputs.map((_, i) => truth(i)),
      ),
    ).toBeGreaterThan(0.9);
  });

  it('folds units the inputs cannot tell apart into the slot: no multi-id input, one lookup a slot', () => {
    const flat = inputs.map((x) => (x.kind === 'multi_id' ? { kind: 'categorical' as const, vocab: 100 } : x)).map(computeUnits);
    const ds = designs(5, 30, 0).map((d) => ({
      ...d,
      ratio: 0.2 + d.members.reduce((s, i) => s + (flat[i]!.slot ? 0.05 : 0.01), 0),
    }));
    const fit = fitComputeModel(flat, ds);
    expect(fit.fitted).toEqual(expect.arrayContaining(['numeric', 'slot']));
    expect(fit.fitted).not.toContain('lookup');
    expect(fit.coef.slot).toBeCloseTo(0.05, 6);
    expect(fit.coef.numeric).toBeCloseTo(0.01, 6);
  });

  it('gives every input one cost when the timings cannot tell a slot from a numeric column, so noise does not rank them', () => {
    // a forward where each input costs 1.5 % whatever its kind (as on a GPU at 65,536 rows), noise 1 %,
    // measured 20 times
    const same = (seed: number): ComputeDesign[] => {
      // random halves and noise from xorshift32
      let a = seed * 2654435761;
      const r = () => {
        a ^= a << 13;
        a ^= a >>> 17;
        a ^= a << 5;
        return (a >>> 0) / 2 ** 32;
      };
      const gauss = () => Math.sqrt(-2 * Math.log(Math.max(r(), 1e-12))) * Math.cos(2 * Math.PI * r());
      return Array.from({ length: 33 }, () => {
        const members = inputs.map((_, i) => i).filter(() => r() < 0.5);
        return { members, ratio: (0.55 + members.length * 0.015) * (1 + 0.01 * gauss()) };
      });
    };
    const fits = Array.from({ length: 20 }, (_, k) => fitComputeModel(units, same(k + 1), { seed: k + 1 }));
    for (const fit of fits) {
      expect(fit.fitted, JSON.stringify([fit.fitted, fit.coef])).toContain('input');
      expect(fit.fitted).not.toContain('numeric');
      expect(fit.fitted).not.toContain('slot');
      expect(fit.coef.numeric).toBe(fit.coef.slot);
      expect(fit.coef.numeric).toBeCloseTo(0.015, 2);
      // one share for all: the ranking is all ties, the same run after run
      expect(new Set(fit.perInput.map((p) => p.share.toFixed(12))).size, JSON.stringify([fit.fitted, fit.coef])).toBe(1);
    }
    for (let k = 1; k < fits.length; k++)
      expect(
        spearman(
          fits[0]!.perInput.map((p) => p.share),
          fits[k]!.perInput.map((p) => p.share),
        ),
      ).toBe(1);
    // where they differ (the first test's world), slot and numeric stay apart
    expect(fitComputeModel(units, designs(1, 40, 0.02), { seed: 1 }).fitted).toEqual(expect.arrayContaining(['numeric', 'slot']));
  });

  it('says so when the designs cannot be fitted', () => {
    expect(() => fitComputeModel(units, [{ members: [0, 1], ratio: 0.5 }])).toThrow(/cannot be fitted/);
  });
});
