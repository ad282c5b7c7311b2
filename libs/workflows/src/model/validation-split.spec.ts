import { describe, expect, it } from 'vitest';
import type { ColumnarDataset } from '@abacus/runtime';
import { carveValidation, VALIDATION_SHARE } from './validation-split';

function rows(n: number): ColumnarDataset {
  const numeric = Float32Array.from({ length: n }, (_, i) => i);
  const offsets = Int32Array.from({ length: n + 1 }, (_, i) => i);
  return {
    rows: n,
    numericNames: ['t'],
    numeric,
    slots: [{ name: 's', ids: Int32Array.from({ length: n }, (_, i) => i % 7), offsets }],
    labels: Float32Array.from({ length: n }, (_, i) => i % 2),
  };
}

describe('carveValidation', () => {
  it('takes the last share of time-ordered rows, after every fitted row', () => {
    const { train, validation } = carveValidation(rows(1000), true);
    expect(validation.rows).toBe(1000 * VALIDATION_SHARE);
    expect(train.rows + validation.rows).toBe(1000);
    expect(Math.max(...train.numeric)).toBeLessThan(Math.min(...validation.numeric));
    expect(Array.from(validation.slots[0]!.ids.slice(0, 3))).toEqual([800 % 7, 801 % 7, 802 % 7]);
  });

  it('takes a seeded share of rows without a time column, disjoint from the fitted rows', () => {
    const a = carveValidation(rows(5000), false);
    const b = carveValidation(rows(5000), false);
    expect(Array.from(a.validation.numeric)).toEqual(Array.from(b.validation.numeric));
    expect(a.validation.rows / 5000).toBeGreaterThan(VALIDATION_SHARE - 0.03);
    expect(a.validation.rows / 5000).toBeLessThan(VALIDATION_SHARE + 0.03);
    const fit = new Set(a.train.numeric);
    expect(Array.from(a.validation.numeric).some((x) => fit.has(x))).toBe(false);
    expect(a.train.rows + a.validation.rows).toBe(5000);
  });

  it('leaves at least one row on each side', () => {
    const { train, validation } = carveValidation(rows(2), true);
    expect([train.rows, validation.rows]).toEqual([1, 1]);
  });
});
