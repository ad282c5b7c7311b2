import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDir } from '@abacus/catalog';
import type { ColumnarDataset } from '@abacus/runtime';
import type { BuiltSet } from './built-samples.cache';
import { switchOff } from './dataset-subset';
import { architectureSchema, trainingSchema } from './model-recipe.schema';
import { ModelTrainer } from './model-trainer';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-finetune-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** y depends on `strong` (numeric) and slot `cat`; `noise` and slot `junk` carry nothing */
function world(rows: number, seed: number): ColumnarDataset {
  let s = seed >>> 0 || 1;
  const u = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
  const numeric = new Float32Array(rows * 2);
  const cat = new Int32Array(rows);
  const junk = new Int32Array(rows);
  const labels = new Float32Array(rows);
  const effect = [-1.2, -0.4, 0.3, 1.1, 0, 0.6];
  for (let i = 0; i < rows; i++) {
    const strong = u() * 4 - 2;
    numeric[i * 2] = strong;
    numeric[i * 2 + 1] = u() * 4 - 2;
    cat[i] = Math.floor(u() * 6);
    junk[i] = Math.floor(u() * 50);
    const z = 1.5 * strong + effect[cat[i]] - 1;
    labels[i] = u() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
  }
  const offsets = Int32Array.from({ length: rows + 1 }, (_, i) => i);
  return {
    rows,
    numericNames: ['strong', 'noise'],
    numeric,
    slots: [
      { name: 'cat', ids: cat, offsets },
      { name: 'junk', ids: junk, offsets },
    ],
    labels,
  };
}

describe('switchOff', () => {
  it('holds numeric columns at the given value and empties the slots, sharing everything else', () => {
    const d = world(50, 3);
    const off = switchOff(d, ['noise', 'cat'], () => 0.25);
    for (let i = 0; i < d.rows; i++) {
      expect(off.numeric[i * 2]).toBe(d.numeric[i * 2]);
      expect(off.numeric[i * 2 + 1]).toBe(0.25);
    }
    expect(off.slots[0].ids.length).toBe(0);
    expect(Array.from(off.slots[0].offsets)).toEqual(new Array(d.rows + 1).fill(0));
    expect(off.slots[1]).toBe(d.slots[1]);
    expect(off.labels).toBe(d.labels);
    // the input is untouched
    expect(d.slots[0].ids.length).toBe(d.rows);
    expect(switchOff(d, [], () => 0).numeric).toBe(d.numeric);
  });
});

describe('ModelTrainer.switchedOff + fineTune (warm retraining checks)', () => {
  it('loses much with a useful input switched off and next to nothing with a useless one, against the same fine-tune with every input on', async () => {
    const dataDir = new DataDir(root);
    const trainer = new ModelTrainer(dataDir, { backend: 'cpu', threads: 1 });
    const all = world(30_000, 7);
    const cut = (a: number, b: number): ColumnarDataset => {
      const idx = Array.from({ length: b - a }, (_, i) => a + i);
      const w = all.numericNames.length;
      return {
        rows: idx.length,
        numericNames: all.numericNames,
        numeric: Float32Array.from(idx.flatMap((r) => Array.from(all.numeric.subarray(r * w, r * w + w)))),
        slots: all.slots.map((s) => ({
          name: s.name,
          ids: Int32Array.from(idx, (r) => s.ids[r]),
          offsets: Int32Array.from({ length: idx.length + 1 }, (_, i) => i),
        })),
        labels: Float32Array.from(idx, (r) => all.labels[r]),
      };
    };
    const built: BuiltSet = {
      key: 'fine-tune-spec',
      cached: false,
      train: cut(0, 18_000),
      validation: cut(18_000, 24_000),
      trainAll: cut(0, 24_000),
      timeOrdered: false,
      test: cut(24_000, 30_000),
      inputs: {
        numeric: ['strong', 'noise'],
        slots: [
          { name: 'cat', vocab: 6 },
          { name: 'junk', vocab: 50 },
        ],
      },
      meta: {},
      dir: 'built/none',
    };
    const arch = architectureSchema.parse({ hidden: [16] });
    const training = trainingSchema.parse({ epochs: 4, batchSize: 256 });
    const base = await trainer.trainOrReuse(built, arch, training);
    const auc = async (off: string[]) => {
      const xs: number[] = [];
      const data = await trainer.switchedOff(base, built, off);
      for (const seed of [1, 2]) xs.push((await trainer.fineTune(base, data, training, { epochs: 1, seed })).validation.auc);
      return (xs[0] + xs[1]) / 2;
    };
    const full = await auc([]);
    expect(Math.abs(full - base.metrics.validation.auc)).toBeLessThan(0.01);
    expect(full - (await auc(['strong']))).toBeGreaterThan(0.05);
    expect(full - (await auc(['cat']))).toBeGreaterThan(0.01);
    expect(Math.abs(full - (await auc(['noise', 'junk'])))).toBeLessThan(0.005);
    await expect(trainer.switchedOff(base, built, ['nope'])).rejects.toThrow(/nope not inputs of the model/);
    // the checkpoint it started from is unchanged: a second fine-tune from it gives the same result
    expect(await auc([])).toBe(full);
    // a step cap ends the epoch early (71 steps an epoch here): still tells the useful input apart
    const data = await trainer.switchedOff(base, built, ['strong']);
    const capped = await trainer.fineTune(base, data, training, { epochs: 1, seed: 1, maxSteps: 30 });
    expect(capped.steps).toBe(30);
    expect((await trainer.fineTune(base, data, training, { epochs: 1, seed: 1 })).steps).toBe(Math.ceil(18_000 / 256));
    expect(full - capped.validation.auc).toBeGreaterThan(0.05);

    // in place (lanes restored from the trained model, inputs switched off inside the model, the rows
    // as they are): the same validation metrics as the checkpoint + switched-off copies above
    const lanes = trainer.fineTuneLanes(base)!;
    for (const off of [[], ['strong'], ['cat', 'noise'], ['noise', 'junk']])
      for (const seed of [1, 2]) {
        const fit = { epochs: 1, seed, maxSteps: 40 };
        const copied = await trainer.fineTune(base, await trainer.switchedOff(base, built, off), training, fit);
        const inPlace = await trainer.fineTune(base, { train: built.train, validation: built.validation, off }, training, fit, {
          lanes,
        });
        expect([off, seed, inPlace.validation]).toEqual([off, seed, copied.validation]);
        expect(inPlace.steps).toBe(40);
      }
    // one fit at a time: one lane model, reused
    expect(lanes.created).toBe(1);
    const other = await trainer.trainOrReuse(built, arch, { ...training, seed: 9 });
    await expect(trainer.fineTune(other, built, training, { epochs: 1, seed: 1 }, { lanes })).rejects.toThrow(
      'fineTune: the lanes belong to another trained model',
    );
  }, 120_000);
});
