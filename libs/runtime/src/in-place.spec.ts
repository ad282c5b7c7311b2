import { describe, expect, it } from 'vitest';

import { runInPlaceParity } from './bench/in-place-parity';
import { makeSyntheticCtr } from './bench/synthetic-ctr';
import { RuntimeModel } from './runtime-model';
import type { ModelSpecInput } from './model-spec.schema';

const spec: ModelSpecInput = {
  numeric: ['num0', 'num1'],
  slots: [0, 1].map((s) => ({ name: `slot${s}`, vocab: 50 })),
  embeddingDim: 8,
  hidden: [16],
  seed: 3,
};

describe('fine-tunes in place: copyStateFrom + switchOff (cpu)', () => {
  it('give the same model, bit for bit, as loading the checkpoint and training on switched-off copies of the rows', async () => {
    const cases = await runInPlaceParity('cpu', { threads: 2 });
    expect(cases).toHaveLength(10);
    for (const c of cases) {
      expect({
        case: `${c.name} without [${c.off.join(', ')}]`,
        pred: c.maxPredDiff,
        param: c.maxParamDiff,
        opt: c.maxOptDiff,
      }).toEqual({
        case: `${c.name} without [${c.off.join(', ')}]`,
        pred: 0,
        param: 0,
        opt: 0,
      });
      expect(c.auc[0]).toBe(c.auc[1]);
    }
    // switching inputs off changes the model's predictions (the check is not vacuous)
    const ref = cases.find((c) => c.off.length === 0 && c.name === cases[1]!.name)!;
    expect(cases[1]!.auc[0]).not.toBe(ref.auc[0]);
  }, 120_000);

  it('names what is wrong: unknown input, other spec or backend, a busy model, ablation with inputs off', async () => {
    const a = RuntimeModel.create(spec, { backend: 'cpu', threads: 1 });
    expect(() => a.switchOff(['nope'])).toThrow('switchOff: "nope" is not an input of this model');
    a.switchOff(['num1', 'slot0']);
    expect(a.inputsOff).toEqual(['num1', 'slot0']);
    const d = makeSyntheticCtr({ rows: 500, numeric: 2, slots: 2, vocab: 50, maxLen: 2, seed: 1 }).dataset;
    await expect(a.ablate(d, { groups: [['num0']], repeats: 1 })).rejects.toThrow(
      'ablate: this model has inputs switched off; switch them on first',
    );
    a.switchOff([]);
    expect(a.inputsOff).toEqual([]);
    await a.ablate(d, { groups: [['num0']], repeats: 1 });
    const other = RuntimeModel.create({ ...spec, hidden: [8] }, { backend: 'cpu', threads: 1 });
    expect(() => a.copyStateFrom(other)).toThrow('copyStateFrom: the models have different specs');
    const tf = RuntimeModel.create(spec, { backend: 'tfjs' });
    expect(() => a.copyStateFrom(tf)).toThrow('copyStateFrom: a cpu model copies only from a cpu model, not tfjs');
    expect(tf.inPlace).toBe(false);
    expect(() => tf.switchOff(['num0'])).toThrow('switchOff: the tfjs backend cannot switch inputs off in place');
    const b = RuntimeModel.create(spec, { backend: 'cpu', threads: 1 });
    const training = b.train(d, { epochs: 1, batchSize: 64 });
    expect(() => a.copyStateFrom(b)).toThrow(/copyStateFrom: the source model is busy \(train\)/);
    await training;
    a.copyStateFrom(b);
    for (const [i, t] of b.tensors().entries()) expect(Array.from(a.tensors()[i]!.data)).toEqual(Array.from(t.data));
    expect(a.step).toBe(b.step);
  });
});
