import { createHash } from 'node:crypto';
import { concatRows, isShardDataset, materialize, shardRanges, sliceRows, type RuntimeData } from '@abacus/runtime';

/**
 * Share of the training split held out as the validation split that experiments decide on. Models
 * fit on the rest (which training itself cuts again: `validationFraction` of it, random rows, for
 * early stopping); the test split is only ever read for the reported result.
 */
export const VALIDATION_SHARE = 0.2;

export interface ThreeWaySplit {
  /** the rows models are fitted on (early stopping holds out its own share of these) */
  train: RuntimeData;
  /** the rows decisions are taken on: the last part of the training time range */
  validation: RuntimeData;
  /** split by seeded blocks of rows (a large set without a time column), not row by row */
  blocks?: true;
}

/**
 * A set without a time column of at least this many rows in shards is split by seeded blocks of
 * consecutive rows, each block wholly fitted or wholly validation: the two parts are views of the
 * shards, where a split row by row would copy every training row into memory.
 */
export const BLOCK_SPLIT_MIN_ROWS = 1_000_000;

/** Rows per block: at least 4,096, and at most 8,192 blocks. */
function blockRows(n: number): number {
  return Math.max(4096, Math.ceil(n / 8192));
}

/** The rows of the blocks `pick` takes and of the others, as merged ranges. */
function blockRanges(n: number, pick: (block: number) => boolean): { taken: [number, number][]; rest: [number, number][] } {
  const size = blockRows(n);
  const taken: [number, number][] = [];
  const rest: [number, number][] = [];
  for (let b = 0; b * size < n; b++) {
    const lo = b * size;
    const hi = Math.min(n, lo + size);
    const to = pick(b) ? taken : rest;
    const prev = to[to.length - 1];
    if (prev && prev[1] === lo) prev[1] = hi;
    else to.push([lo, hi]);
  }
  return { taken, rest };
}

/**
 * Cuts the validation split off the training split: with a time column the last VALIDATION_SHARE
 * of the rows (the built rows are in time order, so validation lies after every fitted row, as the
 * test split lies after the training split); without one a seeded random share (there is no later
 * part): of the rows, or, in a large set in shards, of blocks of rows (BLOCK_SPLIT_MIN_ROWS).
 */
export async function carveValidation(train: RuntimeData, timeOrdered: boolean, seed = 17): Promise<ThreeWaySplit> {
  const views = carveViews(train, timeOrdered, seed);
  if (views) return views;
  const n = train.rows;
  // a seeded hash of the row index: about VALIDATION_SHARE of the rows, the same for every feature set
  const valIdx: number[] = [];
  const fitIdx: number[] = [];
  for (let i = 0; i < n; i++) (hashUnit(i, seed) < VALIDATION_SHARE ? valIdx : fitIdx).push(i);
  if (!valIdx.length || !fitIdx.length) return carveValidation(train, true, seed);
  return { train: await materialize(train, fitIdx), validation: await materialize(train, valIdx) };
}

/**
 * carveValidation's split where both parts are views of the rows (in time order, or by blocks of a
 * large set in shards): nothing is read, so it also cuts a set whose shards are still being
 * written (BuiltSamplesCache.stream); null where the split copies rows.
 */
export function carveViews(train: RuntimeData, timeOrdered: boolean, seed = 17): ThreeWaySplit | null {
  const n = train.rows;
  const nv = n >= 2 ? Math.min(n - 1, Math.max(1, Math.round(n * VALIDATION_SHARE))) : 0;
  // in time order the two parts are ranges: views of the shards, never read here
  if (timeOrdered) return { train: sliceRows(train, 0, n - nv), validation: sliceRows(train, n - nv, n) };
  if (n >= BLOCK_SPLIT_MIN_ROWS && isShardDataset(train)) {
    // a seeded hash of the block index: about VALIDATION_SHARE of the blocks
    const { taken, rest } = blockRanges(n, (b) => hashUnit(b, seed) < VALIDATION_SHARE);
    if (taken.length && rest.length)
      return { train: shardRanges(train, rest), validation: shardRanges(train, taken), blocks: true };
  }
  return null;
}

/**
 * Cross-fitting over the training range: fold `fold` of `folds` equal parts is the validation split
 * and the rest is fitted on. With a time column the parts are consecutive time blocks, fold 0 the
 * last (so with `folds` = 1 / VALIDATION_SHARE fold 0 is carveValidation's split); without one they
 * are seeded hash bands of the rows (fold 0 again the same rows as carveValidation). Every training
 * row is validation in exactly one fold, so a decision that reads all folds is evaluated on the whole
 * training range, never on the test split.
 */
export async function crossFold(
  trainAll: RuntimeData,
  fold: number,
  folds: number,
  timeOrdered: boolean,
  seed = 17,
): Promise<ThreeWaySplit> {
  if (!(Number.isInteger(folds) && folds >= 2)) throw new Error(`crossFold: folds must be an integer >= 2, got ${folds}`);
  if (!(Number.isInteger(fold) && fold >= 0 && fold < folds)) throw new Error(`crossFold: fold ${fold} is not in [0, ${folds})`);
  const n = trainAll.rows;
  if (n < folds) throw new Error(`crossFold: ${n} training rows cannot make ${folds} folds`);
  if (timeOrdered) {
    // block b (0 = earliest) covers rows [round(b n / folds), round((b + 1) n / folds)); fold 0 is the last block
    const b = folds - 1 - fold;
    const lo = Math.round((b * n) / folds);
    const hi = Math.round(((b + 1) * n) / folds);
    return { train: concatRows(sliceRows(trainAll, 0, lo), sliceRows(trainAll, hi, n)), validation: sliceRows(trainAll, lo, hi) };
  }
  const lo = fold / folds;
  const hi = (fold + 1) / folds;
  if (n >= BLOCK_SPLIT_MIN_ROWS && isShardDataset(trainAll)) {
    // seeded hash bands of the block index (fold 0: carveValidation's blocks)
    const { taken, rest } = blockRanges(n, (b) => {
      const u = hashUnit(b, seed);
      return u >= lo && u < hi;
    });
    if (taken.length && rest.length)
      return { train: shardRanges(trainAll, rest), validation: shardRanges(trainAll, taken), blocks: true };
  }
  const fitIdx: number[] = [];
  const valIdx: number[] = [];
  for (let i = 0; i < n; i++) {
    const u = hashUnit(i, seed);
    (u >= lo && u < hi ? valIdx : fitIdx).push(i);
  }
  if (!valIdx.length || !fitIdx.length) return crossFold(trainAll, fold, folds, true, seed);
  return { train: await materialize(trainAll, fitIdx), validation: await materialize(trainAll, valIdx) };
}

/** The key of fold `fold` of `folds` of a built set (the training cache is keyed by it). */
export function crossFoldKey(builtKey: string, fold: number, folds: number): string {
  return createHash('sha256')
    .update(JSON.stringify({ v: 1, samples: builtKey, crossFold: { fold, folds } }))
    .digest('hex')
    .slice(0, 32);
}

/** The key of a three-way set: the built samples' key plus how validation was carved. */
export function threeWayKey(builtKey: string, blocks = false): string {
  return createHash('sha256')
    .update(JSON.stringify({ v: 1, samples: builtKey, validationShare: VALIDATION_SHARE, ...(blocks ? { blocks: 1 } : {}) }))
    .digest('hex')
    .slice(0, 32);
}

/** A uniform number in [0, 1) from (row, seed) (murmur3 finalizer). */
export function hashUnit(i: number, seed: number): number {
  let h = (Math.imul(i, 0x9e3779b1) ^ Math.imul(seed + 0x632be5ab, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  h = (h ^ (h >>> 16)) >>> 0;
  return h / 2 ** 32;
}

/**
 * Which rows of the training split carveValidation puts in the validation split (1) and which are
 * fitted on (0), row by row, for code that must read the fitted rows by position (discover's screen).
 */
export function validationMask(train: RuntimeData, timeOrdered: boolean, seed = 17): Uint8Array {
  const n = train.rows;
  const mask = new Uint8Array(n);
  const nv = n >= 2 ? Math.min(n - 1, Math.max(1, Math.round(n * VALIDATION_SHARE))) : 0;
  const last = () => {
    mask.fill(0);
    mask.fill(1, n - nv);
    return mask;
  };
  if (timeOrdered) return last();
  if (n >= BLOCK_SPLIT_MIN_ROWS && isShardDataset(train)) {
    const { taken, rest } = blockRanges(n, (b) => hashUnit(b, seed) < VALIDATION_SHARE);
    if (taken.length && rest.length) {
      for (const [lo, hi] of taken) mask.fill(1, lo, hi);
      return mask;
    }
  }
  let val = 0;
  for (let i = 0; i < n; i++) val += mask[i] = hashUnit(i, seed) < VALIDATION_SHARE ? 1 : 0;
  return val && val < n ? mask : last();
}
