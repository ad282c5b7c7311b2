import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { makeSyntheticCtr } from './bench/synthetic-ctr';
import { RuntimeModel } from './runtime-model';

// Regression: a model without numeric inputs has empty normalization tensors; their views came back
// from the addon over a detached ArrayBuffer and saving the checkpoint threw "Cannot perform
// Construct on a detached ArrayBuffer" (subtract's prune retrains such models).
describe('zero-size parameter tensors', () => {
  const shapes = [
    { name: 'no numeric inputs', numeric: 0, slots: 3, wide: false },
    { name: 'no numeric inputs, wide part', numeric: 0, slots: 2, wide: true },
    { name: 'no slots', numeric: 3, slots: 0, wide: true },
  ];
  for (const sh of shapes) {
    it(`${sh.name}: every tensor view is usable and the checkpoint round-trips`, async () => {
      const syn = makeSyntheticCtr({ rows: 2_000, numeric: sh.numeric, slots: sh.slots, vocab: 20, maxLen: 2, seed: 5 });
      const spec = {
        numeric: Array.from({ length: sh.numeric }, (_, i) => `num${i}`),
        slots: Array.from({ length: sh.slots }, (_, i) => ({ name: `slot${i}`, vocab: 20 })),
        embeddingDim: 4,
        wide: sh.wide,
        hidden: [8],
      };
      const m = RuntimeModel.create(spec, { backend: 'cpu', threads: 1 });
      await m.train(syn.dataset, { epochs: 1, batchSize: 256 });
      for (const t of [...m.tensors(), ...m.optimizerTensors()]) {
        expect(() => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), t.name).not.toThrow();
      }
      const dir = path.join(mkdtempSync(path.join(tmpdir(), 'abacus-zero-')), 'ckpt');
      await m.save(dir);
      const back = await RuntimeModel.load(dir, { backend: 'cpu', threads: 1 });
      const a = await m.predict(syn.dataset);
      const b = await back.predict(syn.dataset);
      expect(Array.from(b)).toEqual(Array.from(a));
    });
  }
});
