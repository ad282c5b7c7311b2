import { describe, expect, it } from 'vitest';
import { rowRange, selectRows, type ColumnarDataset } from '@abacus/runtime';
import { foldIndices, foldOrder, sampleRows } from './dataset-subset';

describe('sampleRows', () => {
  it('draws n distinct rows, sorted, the same for a seed and other for another seed', () => {
    const a = sampleRows(10_000, 3_000, 7);
    expect(a).toHaveLength(3_000);
    expect(new Set(a).size).toBe(3_000);
    expect(a.every((r, i) => r < 10_000 && (i === 0 || r > a[i - 1]))).toBe(true);
    expect(sampleRows(10_000, 3_000, 7)).toEqual(a);
    const b = sampleRows(10_000, 3_000, 8);
    const shared = b.filter((r) => new Set(a).has(r)).length;
    // two independent 30% samples share about 9% of the rows
    expect(shared).toBeGreaterThan(700);
    expect(shared).toBeLessThan(1_100);
    // spread over the whole range, not a block
    expect(a.filter((r) => r < 5_000).length).toBeGreaterThan(1_350);
    expect(a.filter((r) => r < 5_000).length).toBeLessThan(1_650);
  });

  it('gives every row when n is not below the row count', () => {
    expect(Array.from(sampleRows(5, 5, 1))).toEqual([0, 1, 2, 3, 4]);
    expect(Array.from(sampleRows(5, 9, 1))).toEqual([0, 1, 2, 3, 4]);
  });
});

describe('foldOrder and rowRange', () => {
  const data = (n: number): ColumnarDataset => {
    const offsets = new Int32Array(n + 1);
    const ids: number[] = [];
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < i % 3; k++) ids.push(i * 10 + k);
      offsets[i + 1] = ids.length;
    }
    return {
      rows: n,
      numericNames: ['a', 'b'],
      numeric: Float32Array.from({ length: 2 * n }, (_, j) => j / 2),
      slots: [{ name: 's', offsets, ids: Int32Array.from(ids) }],
      labels: Float32Array.from({ length: n }, (_, i) => i % 2),
      weights: Float32Array.from({ length: n }, (_, i) => 1 + i),
    };
  };

  it('lays out the same folds as foldIndices, fold after fold, each a range of one copy', () => {
    for (const [rows, folds, seed] of [
      [1, 2, 1],
      [97, 5, 3],
      [1000, 7, 11],
    ] as const) {
      const ds = data(rows);
      const laid = foldOrder(rows, folds, seed);
      expect(laid.bounds).toHaveLength(folds + 1);
      expect(laid.bounds[folds]).toBe(rows);
      const copy = selectRows(ds, laid.order);
      foldIndices(rows, folds, seed).forEach((idx, k) => {
        expect(Array.from(laid.order.subarray(laid.bounds[k], laid.bounds[k + 1]))).toEqual(Array.from(idx));
        // the fold as a range of the copy reads exactly the rows a copy of the fold would
        const view = rowRange(copy, laid.bounds[k]!, laid.bounds[k + 1]!);
        const own = selectRows(ds, idx);
        expect(view.rows).toBe(own.rows);
        expect(Array.from(view.numeric)).toEqual(Array.from(own.numeric));
        expect(Array.from(view.labels)).toEqual(Array.from(own.labels));
        expect(Array.from(view.weights!)).toEqual(Array.from(own.weights!));
        expect(Array.from(view.slots[0]!.offsets)).toEqual(Array.from(own.slots[0]!.offsets));
        expect(Array.from(view.slots[0]!.ids)).toEqual(Array.from(own.slots[0]!.ids));
      });
    }
  });

  it('splits a sample of rows as foldIndices splits a copy of them', () => {
    const among = sampleRows(5000, 800, 4);
    const laid = foldOrder(5000, 5, 9, among);
    expect(laid.order).toHaveLength(800);
    foldIndices(800, 5, 9).forEach((idx, k) => {
      expect(Array.from(laid.order.subarray(laid.bounds[k], laid.bounds[k + 1]))).toEqual(Array.from(idx, (i) => among[i]!));
    });
  });

  it('rejects a range outside the rows', () => {
    expect(() => rowRange(data(4), 2, 5)).toThrow(/\[2, 5\) is not a range of the 4 rows/);
    expect(() => rowRange(data(4), 3, 2)).toThrow(/not a range/);
  });
});
