import { describe, expect, it } from 'vitest';
import { sampleRows } from './dataset-subset';

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
