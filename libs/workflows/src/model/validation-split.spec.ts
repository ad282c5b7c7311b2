import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isShardDataset, materialize, type ColumnarDataset, type RuntimeData, type ShardDataset } from '@abacus/runtime';
import { asShards } from '../../../../test/support/shards';
import {
  BLOCK_SPLIT_MIN_ROWS,
  carveValidation,
  crossFold,
  crossFoldKey,
  threeWayKey,
  VALIDATION_SHARE,
  type ThreeWaySplit,
} from './validation-split';

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

const columnar = async (p: Promise<ThreeWaySplit>) => {
  const s = await p;
  return { train: s.train as ColumnarDataset, validation: s.validation as ColumnarDataset };
};
const cv = (...a: Parameters<typeof carveValidation>) => columnar(carveValidation(...a));
const cf = (...a: Parameters<typeof crossFold>) => columnar(crossFold(...a));

describe('carveValidation', async () => {
  it('takes the last share of time-ordered rows, after every fitted row', async () => {
    const { train, validation } = await cv(rows(1000), true);
    expect(validation.rows).toBe(1000 * VALIDATION_SHARE);
    expect(train.rows + validation.rows).toBe(1000);
    expect(Math.max(...train.numeric)).toBeLessThan(Math.min(...validation.numeric));
    expect(Array.from(validation.slots[0]!.ids.slice(0, 3))).toEqual([800 % 7, 801 % 7, 802 % 7]);
  });

  it('takes a seeded share of rows without a time column, disjoint from the fitted rows', async () => {
    const a = await cv(rows(5000), false);
    const b = await cv(rows(5000), false);
    expect(Array.from(a.validation.numeric)).toEqual(Array.from(b.validation.numeric));
    expect(a.validation.rows / 5000).toBeGreaterThan(VALIDATION_SHARE - 0.03);
    expect(a.validation.rows / 5000).toBeLessThan(VALIDATION_SHARE + 0.03);
    const fit = new Set(a.train.numeric);
    expect(Array.from(a.validation.numeric).some((x) => fit.has(x))).toBe(false);
    expect(a.train.rows + a.validation.rows).toBe(5000);
  });

  it('leaves at least one row on each side', async () => {
    const { train, validation } = await cv(rows(2), true);
    expect([train.rows, validation.rows]).toEqual([1, 1]);
  });
});

describe('crossFold', async () => {
  for (const timeOrdered of [true, false]) {
    it(`puts every training row in exactly one validation fold (${timeOrdered ? 'time blocks' : 'hash bands'})`, async () => {
      const n = 1003;
      const folds = 7;
      const seen = new Map<number, number>();
      for (let k = 0; k < folds; k++) {
        const { train, validation } = await cf(rows(n), k, folds, timeOrdered);
        expect(train.rows + validation.rows).toBe(n);
        const fit = new Set(train.numeric);
        for (const x of validation.numeric) {
          expect(fit.has(x)).toBe(false);
          seen.set(x, (seen.get(x) ?? 0) + 1);
        }
        if (timeOrdered) expect(validation.rows).toBeGreaterThanOrEqual(Math.floor(n / folds));
      }
      expect(seen.size).toBe(n);
      expect([...seen.values()].every((c) => c === 1)).toBe(true);
    });
  }

  it('fold 0 of 1 / VALIDATION_SHARE folds is the carved validation split', async () => {
    const folds = Math.round(1 / VALIDATION_SHARE);
    for (const timeOrdered of [true, false]) {
      const a = await cf(rows(5000), 0, folds, timeOrdered);
      const b = await cv(rows(5000), timeOrdered);
      expect(Array.from(a.validation.numeric)).toEqual(Array.from(b.validation.numeric));
    }
  });

  it('with a time column the folds are consecutive blocks, fold 0 the latest', async () => {
    const f0 = (await cf(rows(100), 0, 4, true)).validation.numeric;
    const f3 = (await cf(rows(100), 3, 4, true)).validation.numeric;
    expect([f0[0], f0[f0.length - 1]]).toEqual([75, 99]);
    expect([f3[0], f3[f3.length - 1]]).toEqual([0, 24]);
  });

  it('refuses folds it cannot make and keys each fold apart', async () => {
    await expect(cf(rows(100), 4, 4, true)).rejects.toThrow(/fold 4/);
    await expect(cf(rows(3), 0, 4, true)).rejects.toThrow(/3 training rows/);
    await expect(cf(rows(100), 0, 1, true)).rejects.toThrow(/folds/);
    expect(crossFoldKey('k', 0, 5)).not.toBe(crossFoldKey('k', 1, 5));
    expect(crossFoldKey('k', 0, 5)).not.toBe(crossFoldKey('k', 0, 10));
  });
});

describe('a large set in shards without a time column', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'abacus-split-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const n = BLOCK_SPLIT_MIN_ROWS + 12_345;
  let shards: ShardDataset;
  beforeAll(async () => {
    // column t holds each row's index; three shards of uneven sizes
    shards = await asShards(dir, rows(n), [400_000, 333_333, n - 733_333], 'big');
  }, 60_000);
  const indexes = async (d: RuntimeData) => Array.from((await materialize(d)).numeric);

  it('is split by seeded blocks of rows: views of the shards, disjoint, covering every row, about the share', async () => {
    const s = await carveValidation(shards, false);
    expect(s.blocks).toBe(true);
    expect(isShardDataset(s.train) && isShardDataset(s.validation)).toBe(true);
    expect(s.train.rows + s.validation.rows).toBe(n);
    expect(Math.abs(s.validation.rows / n - VALIDATION_SHARE)).toBeLessThan(0.05);
    const fit = await indexes(s.train);
    const val = await indexes(s.validation);
    const all = [...fit, ...val].sort((a, b) => a - b);
    expect(all).toHaveLength(n);
    expect(all.every((v, i) => v === i)).toBe(true);
    // each part keeps the rows' order, and the split is seeded
    expect(val.every((v, i) => i === 0 || v > val[i - 1]!)).toBe(true);
    expect(await indexes((await carveValidation(shards, false)).validation)).toEqual(val);
    expect(await indexes((await carveValidation(shards, false, 18)).validation)).not.toEqual(val);
    expect(threeWayKey('k', true)).not.toBe(threeWayKey('k'));
  }, 60_000);

  it('puts every row in exactly one fold, and fold 0 of 1 / VALIDATION_SHARE folds is the carved split', async () => {
    const folds = Math.round(1 / VALIDATION_SHARE);
    const seen = new Uint8Array(n);
    for (let f = 0; f < folds; f++) {
      const s = await crossFold(shards, f, folds, false);
      expect(s.blocks).toBe(true);
      expect(s.train.rows + s.validation.rows).toBe(n);
      for (const v of await indexes(s.validation)) seen[v]! += 1;
      if (f === 0) expect(await indexes(s.validation)).toEqual(await indexes((await carveValidation(shards, false)).validation));
    }
    expect(seen.every((c) => c === 1)).toBe(true);
  }, 120_000);

  it('below BLOCK_SPLIT_MIN_ROWS is split row by row, as before', async () => {
    const small = await asShards(dir, rows(5000), [5000], 'small');
    const s = await carveValidation(small, false);
    expect(s.blocks).toBeUndefined();
    const { validation } = await cv(rows(5000), false);
    expect(await indexes(s.validation)).toEqual(Array.from(validation.numeric));
  });
});
