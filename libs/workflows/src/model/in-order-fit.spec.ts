import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { holdoutRanges, inOrderChunkRows, subRanges, type RowRanges } from './in-order-fit';

const rowsOf = (ranges: RowRanges) => ranges.flatMap(([lo, hi]) => Array.from({ length: hi - lo }, (_, i) => lo + i));

describe('in-order first epoch: holdout blocks and chunks', () => {
  it('the holdout and the fitted rows are disjoint, ordered, cover every row, and are about the fraction asked for', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40_000 }), fc.constantFrom(0, 0.05, 0.1, 0.3), fc.integer({ min: 0, max: 1000 }), (rows, fraction, seed) => {
        const { fit, holdout } = holdoutRanges(rows, fraction, seed);
        const all = [...rowsOf(fit), ...rowsOf(holdout)].sort((a, b) => a - b);
        expect(all).toEqual(Array.from({ length: rows }, (_, i) => i));
        for (const r of [fit, holdout])
          for (let i = 0; i < r.length; i++) {
            expect(r[i]![0]).toBeLessThan(r[i]![1]);
            if (i) expect(r[i - 1]![1]).toBeLessThan(r[i]![0]); // merged: never touching
          }
        const held = rowsOf(holdout).length;
        if (fraction === 0 || rows < 2) expect(held).toBe(0);
        else {
          expect(held).toBeGreaterThan(0);
          expect(held).toBeLessThan(rows);
          if (rows >= 20_000) expect(Math.abs(held / rows - fraction)).toBeLessThan(0.05);
        }
        // the same rows for the same seed
        expect(holdoutRanges(rows, fraction, seed)).toEqual({ fit, holdout });
      }),
      { numRuns: 100 },
    );
  });

  it('chunks of the fitted rows are the rows in order, at most 16 of them, none under 65,536 rows but the last', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3_000_000 }), fc.integer({ min: 0, max: 50 }), (rows, seed) => {
        const { fit } = holdoutRanges(rows, 0.1, seed);
        const n = fit.reduce((a, [lo, hi]) => a + hi - lo, 0);
        const size = inOrderChunkRows(n);
        const chunks = Math.ceil(n / size);
        expect(chunks).toBeLessThanOrEqual(16);
        if (chunks > 1) expect(size).toBeGreaterThanOrEqual(65_536);
        // the chunks' ranges, one after another and merged where they touch, are the fitted rows' ranges
        const seen: RowRanges = [];
        for (let c = 0; c < chunks; c++) {
          const part = subRanges(fit, c * size, Math.min(n, (c + 1) * size));
          expect(part.reduce((a, [lo, hi]) => a + hi - lo, 0)).toBe(Math.min(n, (c + 1) * size) - c * size);
          for (const [lo, hi] of part) {
            const prev = seen[seen.length - 1];
            if (prev && prev[1] === lo) prev[1] = hi;
            else seen.push([lo, hi]);
          }
        }
        expect(seen).toEqual(fit);
      }),
      { numRuns: 60 },
    );
  });
});
