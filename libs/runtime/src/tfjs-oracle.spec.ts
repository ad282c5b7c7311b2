import { describe, expect, it } from 'vitest';

import { makeSyntheticCtr } from './bench/synthetic-ctr';
import type { ModelSpecInput } from './model-spec.schema';
import { RuntimeModel } from './runtime-model';

/** |a - b| <= 1e-4 * |b| for |b| >= 1e-3, else |a - b| <= 1e-7 (i.e. 1e-4 x 1e-3) */
function maxViolation(a: Float32Array, b: Float32Array): { worst: number; at: number } {
  expect(a.length).toBe(b.length);
  let worst = 0, at = -1;
  for (let i = 0; i < a.length; i++) {
    const v = Math.abs(a[i]! - b[i]!) / (1e-4 * Math.max(Math.abs(b[i]!), 1e-3));
    if (!(v <= worst)) {
      worst = v;
      at = i;
    }
  }
  return { worst, at };
}

const data = makeSyntheticCtr({ rows: 96, numeric: 3, slots: 3, vocab: 40, maxLen: 4, seed: 5, padding: 0.3 });
// a row whose slot 2 is only padding (empty bag) and weights that are not all one
data.dataset.slots[2]!.ids.fill(-1, data.dataset.slots[2]!.offsets[7]!, data.dataset.slots[2]!.offsets[8]!);
const weights = Float32Array.from({ length: 96 }, (_, i) => 0.5 + (i % 3) * 0.5);

describe('native CPU backend against the @tensorflow/tfjs oracle', () => {
  for (const pooling of ['sum', 'mean'] as const)
    for (const wide of [false, true]) {
      it(`forward logits and every gradient agree (${pooling} pooling, wide ${wide ? 'on' : 'off'})`, () => {
        const spec: ModelSpecInput = {
          numeric: ['num0', 'num1', 'num2'],
          slots: [0, 1, 2].map((s) => ({ name: `slot${s}`, vocab: 40 })),
          pooling,
          wide,
          embeddingDim: 8,
          hidden: [16, 8],
          seed: 3,
        };
        const cpu = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
        const ref = RuntimeModel.create(spec, { backend: 'tfjs' });
        const d = { ...data.dataset, weights };
        // wide weights start at zero: give them values so their gradient paths matter
        for (const t of cpu.tensors()) if (t.name.startsWith('wide.')) t.data.forEach((_, i) => (t.data[i] = Math.sin(i) * 0.1));
        const g = cpu.gradients(d); // fits the normalization first
        ref.copyWeightsFrom(cpu);
        const o = ref.gradients(d);
        expect(g.backend).toBe('cpu');
        expect(o.backend).toBe('tfjs');
        expect(Math.abs(g.loss - o.loss) / o.loss).toBeLessThan(1e-4);
        expect(maxViolation(g.logits, o.logits).worst).toBeLessThanOrEqual(1);
        const names = Object.keys(o.grads).sort();
        expect(Object.keys(g.grads).sort()).toEqual(names);
        expect(names).toContain('embedding.table');
        if (wide) expect(names).toEqual(expect.arrayContaining(['wide.table', 'wide.numeric']));
        for (const n of names) {
          const v = maxViolation(g.grads[n]!, o.grads[n]!);
          expect({ n, ...v, ok: v.worst <= 1 }).toEqual({ n, worst: v.worst, at: v.at, ok: true });
        }
        // some embedding rows really received gradient, and padding ids did not create any
        expect(o.grads['embedding.table']!.some((x) => x !== 0)).toBe(true);
      });
    }

  it('one training step updates the same rows and weights (sparse Adagrad + dense Adam)', async () => {
    const spec: ModelSpecInput = {
      numeric: ['num0', 'num1', 'num2'],
      slots: [0, 1, 2].map((s) => ({ name: `slot${s}`, vocab: 40 })),
      pooling: 'mean',
      wide: true,
      embeddingDim: 8,
      hidden: [16],
      optimizer: { sparse: { kind: 'adagrad', lr: 0.05 }, dense: { lr: 0.01 } },
      seed: 9,
    };
    const cpu = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
    const ref = RuntimeModel.create(spec, { backend: 'tfjs' });
    cpu.gradients(data.dataset);
    ref.copyWeightsFrom(cpu);
    const before = new Map(cpu.tensors().map((t) => [t.name, t.data.slice()]));
    const grads = ref.gradients(data.dataset).grads;
    await cpu.train(data.dataset, { epochs: 1, batchSize: 96, shuffle: false });
    await ref.train(data.dataset, { epochs: 1, batchSize: 96, shuffle: false });
    expect(cpu.step).toBe(1);
    const refT = new Map(ref.tensors().map((t) => [t.name, t.data]));
    for (const t of cpu.tensors()) {
      const r = refT.get(t.name)!, b = before.get(t.name)!, g = grads[t.name];
      for (let i = 0; i < t.data.length; i++) {
        // Adam's first step is lr * sign(g): compare where the gradient's sign is well defined
        if (g && Math.abs(g[i]!) < 1e-4 && !t.name.startsWith('embedding') && !t.name.startsWith('wide.table')) continue;
        expect(Math.abs(t.data[i]! - r[i]!)).toBeLessThan(2e-6);
      }
      if (t.name === 'embedding.table') {
        // untouched rows stay exactly as they were (sparse update)
        const changed = t.data.filter((x, i) => x !== b[i]).length;
        const touched = grads[t.name]!.filter((x) => x !== 0).length;
        expect(changed).toBe(touched);
      }
    }
  });
});
