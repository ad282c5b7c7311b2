import { createHash } from 'node:crypto';
import { concatRows, materialize, sliceRows, type RuntimeData } from '@abacus/runtime';

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
}

/**
 * Cuts the validation split off the training split: with a time column the last VALIDATION_SHARE
 * of the rows (the built rows are in time order, so validation lies after every fitted row, as the
 * test split lies after the training split); without one a seeded random share (there is no later part).
 */
export async function carveValidation(train: RuntimeData, timeOrdered: boolean, seed = 17): Promise<ThreeWaySplit> {
  const n = train.rows;
  const nv = n >= 2 ? Math.min(n - 1, Math.max(1, Math.round(n * VALIDATION_SHARE))) : 0;
  // in time order the two parts are ranges: views of the shards, never read here
  if (timeOrdered) return { train: sliceRows(train, 0, n - nv), validation: sliceRows(train, n - nv, n) };
  // a seeded hash of the row index: about VALIDATION_SHARE of the rows, the same for every feature set
  const valIdx: number[] = [];
  const fitIdx: number[] = [];
  for (let i = 0; i < n; i++) (hashUnit(i, seed) < VALIDATION_SHARE ? valIdx : fitIdx).push(i);
  if (!valIdx.length || !fitIdx.length) return carveValidation(train, true, seed);
  return { train: await materialize(train, fitIdx), validation: await materialize(train, valIdx) };
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
  const fitIdx: number[] = [];
  const valIdx: number[] = [];
  const lo = fold / folds;
  const hi = (fold + 1) / folds;
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
export function threeWayKey(builtKey: string): string {
  return createHash('sha256')
    .update(JSON.stringify({ v: 1, samples: builtKey, validationShare: VALIDATION_SHARE }))
    .digest('hex')
    .slice(0, 32);
}

/** A uniform number in [0, 1) from (row, seed) (murmur3 finalizer). */
function hashUnit(i: number, seed: number): number {
  let h = (Math.imul(i, 0x9e3779b1) ^ Math.imul(seed + 0x632be5ab, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  h = (h ^ (h >>> 16)) >>> 0;
  return h / 2 ** 32;
}
