import { describe, expect, it } from 'vitest';

import { makeSyntheticCtr } from './bench/synthetic-ctr';
import { RuntimeModel } from './runtime-model';

// Regression: a model whose loss went to NaN predicted NaN, and the AUC's tie-group scan never
// advanced past a NaN (NaN == NaN is false): validation at the end of the first epoch hung forever,
// holding its trial (the job lock kept being renewed, so no other worker took it over).
describe('a diverged model', () => {
  const syn = makeSyntheticCtr({ rows: 4_000, numeric: 3, slots: 1, vocab: 5, maxLen: 1, seed: 1 });
  const spec = {
    numeric: ['num0', 'num1', 'num2'],
    slots: [{ name: 'slot0', vocab: 5 }],
    hidden: [16],
    wide: true,
    embeddingDim: 4,
    // far beyond any sane rate: the loss is NaN within a few steps
    optimizer: { dense: { lr: 1e30 }, sparse: { lr: 1e30 } },
  };

  it('finishes training with early stopping on validation and reports NaN, and evaluates to NaN', async () => {
    const m = RuntimeModel.create(spec, { backend: 'cpu', threads: 1 });
    const r = await m.train(syn.dataset, {
      epochs: 3,
      batchSize: 64,
      validationFraction: 0.1,
      earlyStopping: { patience: 1, monitor: 'auc', restoreBest: true },
    });
    expect(Number.isNaN(r.finalLoss)).toBe(true);
    const ev = await m.evaluate(syn.dataset);
    expect(Number.isNaN(ev.auc)).toBe(true);
    expect(Number.isNaN(ev.logloss)).toBe(true);
  });
});
