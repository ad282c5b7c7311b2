import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BinningOptions } from './binning.types';
import { fitCategoricalBinning } from './categorical-binning';
import { fitNumericBinning } from './numeric-binning';
import { computeWoe } from './woe-stats';

const RUNS = { numRuns: 150 };

const options = fc.record({
  prebins: fc.integer({ min: 2, max: 30 }),
  maxBins: fc.integer({ min: 2, max: 12 }),
  minBinShare: fc.double({ min: 0, max: 0.3, noNaN: true }),
  minCategoryShare: fc.double({ min: 0, max: 0.3, noNaN: true }),
  minIdShare: fc.constant(0),
  smoothing: fc.double({ min: 0.01, max: 5, noNaN: true }),
});

/** rows of (value or missing, label) with both classes present */
const numericRows = fc
  .array(
    fc.tuple(
      fc.option(fc.oneof(fc.integer({ min: -20, max: 20 }), fc.double({ min: -1e6, max: 1e6, noNaN: true })), { freq: 8 }),
      fc.integer({ min: 0, max: 1 }),
    ),
    { minLength: 2, maxLength: 300 },
  )
  .filter((rows) => rows.some(([, y]) => y === 1) && rows.some(([, y]) => y === 0));

const categoricalRows = fc
  .array(fc.tuple(fc.option(fc.integer({ min: 0, max: 15 }), { freq: 8 }), fc.integer({ min: 0, max: 1 })), {
    minLength: 2,
    maxLength: 300,
  })
  .filter((rows) => rows.some(([, y]) => y === 1) && rows.some(([, y]) => y === 0));

const allRows = (n: number) => Int32Array.from({ length: n }, (_, i) => i);

function numeric(rows: [number | null, number][], opts: BinningOptions) {
  const values = Float64Array.from(rows, ([v]) => (v === null ? NaN : v));
  const y = Uint8Array.from(rows, ([, l]) => l);
  const fit = fitNumericBinning(values, y, allRows(rows.length), opts);
  const nonEvents = fit.counts.map((c, i) => c - fit.events[i]);
  return { fit, woe: computeWoe(fit.events, nonEvents, opts.smoothing) };
}

function categorical(rows: [number | null, number][], opts: BinningOptions) {
  // dictionary in order of first appearance, as the table reader builds it
  const dictionary: string[] = [];
  const codes = Int32Array.from(rows, ([v]) => {
    if (v === null) return -1;
    const s = `c${v}`;
    if (!dictionary.includes(s)) dictionary.push(s);
    return dictionary.indexOf(s);
  });
  const y = Uint8Array.from(rows, ([, l]) => l);
  const fit = fitCategoricalBinning(codes, dictionary, y, allRows(rows.length), opts);
  const nonEvents = fit.counts.map((c, i) => c - fit.events[i]);
  return { fit, woe: computeWoe(fit.events, nonEvents, opts.smoothing) };
}

const sum = (a: ArrayLike<number>) => Array.from(a).reduce((s, x) => s + x, 0);

/** a permutation of 0..n-1 from fast-check's random numbers */
const shuffled = <T>(rows: T[], keys: number[]) =>
  rows
    .map((r, i) => [r, keys[i % keys.length] + i / rows.length] as const)
    .sort((a, b) => a[1] - b[1])
    .map(([r]) => r);

describe('WOE/IV binning (property-based)', () => {
  it('numeric: bins cover every row, IV >= 0, every WOE finite with smoothing', () => {
    fc.assert(
      fc.property(numericRows, options, (rows, opts) => {
        const { fit, woe } = numeric(rows, opts);
        expect(sum(fit.counts)).toBe(rows.length);
        expect(sum(fit.events)).toBe(rows.filter(([, y]) => y === 1).length);
        expect(Array.from(fit.countRows(allRows(rows.length)))).toEqual(Array.from(fit.counts));
        expect(woe.iv).toBeGreaterThanOrEqual(0);
        for (const t of woe.ivTerms) expect(t).toBeGreaterThanOrEqual(-1e-12);
        for (const w of woe.woe) expect(Number.isFinite(w)).toBe(true);
      }),
      RUNS,
    );
  });

  it('numeric: the event rate of the value bins is monotone in the chosen trend', () => {
    fc.assert(
      fc.property(numericRows, options, (rows, opts) => {
        const { fit } = numeric(rows, opts);
        // the last bin is the missing bin, outside the ordering
        const rates = Array.from(fit.counts.subarray(0, -1), (c, i) => (c > 0 ? fit.events[i] / c : NaN)).filter(
          (r) => !Number.isNaN(r),
        );
        for (let i = 1; i < rates.length; i++) {
          if (fit.trend === 'descending') expect(rates[i]).toBeLessThanOrEqual(rates[i - 1] + 1e-12);
          else expect(rates[i]).toBeGreaterThanOrEqual(rates[i - 1] - 1e-12);
        }
        expect(fit.counts.length - 1).toBeLessThanOrEqual(opts.maxBins);
      }),
      RUNS,
    );
  });

  it('numeric: the same bins and IV whatever the row order', () => {
    fc.assert(
      fc.property(
        numericRows,
        options,
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1 }),
        (rows, opts, keys) => {
          const a = numeric(rows, opts);
          const b = numeric(shuffled(rows, keys), opts);
          expect(b.fit.labels).toEqual(a.fit.labels);
          expect(Array.from(b.fit.counts)).toEqual(Array.from(a.fit.counts));
          expect(Array.from(b.fit.events)).toEqual(Array.from(a.fit.events));
          expect(b.woe.iv).toBeCloseTo(a.woe.iv, 12);
        },
      ),
      RUNS,
    );
  });

  it('categorical: bins cover every row, IV >= 0, finite WOE, and invariance under row order', () => {
    fc.assert(
      fc.property(
        categoricalRows,
        options,
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1 }),
        (rows, opts, keys) => {
          const a = categorical(rows, opts);
          expect(sum(a.fit.counts)).toBe(rows.length);
          expect(a.woe.iv).toBeGreaterThanOrEqual(0);
          for (const w of a.woe.woe) expect(Number.isFinite(w)).toBe(true);
          const b = categorical(shuffled(rows, keys), opts);
          // bins as sets of categories with their counts: the order of first appearance must not matter
          const bins = (r: typeof a) =>
            r.fit.labels
              .map((l, i) => `${JSON.stringify(Array.isArray(l) ? [...l].sort() : l)}:${r.fit.counts[i]}:${r.fit.events[i]}`)
              .sort();
          expect(bins(b)).toEqual(bins(a));
          expect(b.woe.iv).toBeCloseTo(a.woe.iv, 12);
        },
      ),
      RUNS,
    );
  });

  it('computeWoe: IV >= 0 and each term >= 0 for any counts, finite with smoothing', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(1000), fc.nat(1000)), { minLength: 1, maxLength: 20 }),
        fc.double({ min: 0.01, max: 5, noNaN: true }),
        (bins, smoothing) => {
          const r = computeWoe(
            bins.map(([e]) => e),
            bins.map(([, ne]) => ne),
            smoothing,
          );
          expect(r.iv).toBeGreaterThanOrEqual(0);
          for (const t of r.ivTerms) expect(t).toBeGreaterThanOrEqual(-1e-12);
          for (const w of r.woe) expect(Number.isFinite(w)).toBe(true);
        },
      ),
      RUNS,
    );
  });
});
