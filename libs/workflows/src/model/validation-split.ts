import { createHash } from 'node:crypto';
import type { ColumnarDataset } from '@abacus/runtime';
import { subsetDataset } from './dataset-subset';

/**
 * Share of the training split held out as the validation split that experiments decide on. Models
 * fit on the rest (which training itself cuts again: `validationFraction` of it, random rows, for
 * early stopping); the test split is only ever read for the reported result.
 */
export const VALIDATION_SHARE = 0.2;

export interface ThreeWaySplit {
  /** the rows models are fitted on (early stopping holds out its own share of these) */
  train: ColumnarDataset;
  /** the rows decisions are taken on: the last part of the training time range */
  validation: ColumnarDataset;
}

/**
 * Cuts the validation split off the training split: with a time column the last VALIDATION_SHARE
 * of the rows (the built rows are in time order, so validation lies after every fitted row, as the
 * test split lies after the training split); without one a seeded random share (there is no later part).
 */
export function carveValidation(train: ColumnarDataset, timeOrdered: boolean, seed = 17): ThreeWaySplit {
  const n = train.rows;
  const nv = n >= 2 ? Math.min(n - 1, Math.max(1, Math.round(n * VALIDATION_SHARE))) : 0;
  if (timeOrdered) {
    const fitIdx = Uint32Array.from({ length: n - nv }, (_, i) => i);
    const valIdx = Uint32Array.from({ length: nv }, (_, i) => n - nv + i);
    return { train: subsetDataset(train, fitIdx), validation: subsetDataset(train, valIdx) };
  }
  // a seeded hash of the row index: about VALIDATION_SHARE of the rows, the same for every feature set
  const valIdx: number[] = [];
  const fitIdx: number[] = [];
  for (let i = 0; i < n; i++) (hashUnit(i, seed) < VALIDATION_SHARE ? valIdx : fitIdx).push(i);
  if (!valIdx.length || !fitIdx.length) return carveValidation(train, true, seed);
  return { train: subsetDataset(train, fitIdx), validation: subsetDataset(train, valIdx) };
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
