import { simulateWorld } from '@abacus/samples';
import { describe, expect, it } from 'vitest';

import { flatSamplesToDataset } from './flat-samples.adapter';
import { RuntimeModel } from './runtime-model';

/**
 * The simulator's 'additive' click model has only effects this model family can represent, so the
 * upper bound it reports (the exact test AUC of the planted logit) is reachable in principle; what
 * is left is the estimation error of 3M impressions.
 */
describe('training on the simulator, reachable bound', () => {
  it('reaches a test AUC within 0.005 of the planted-logit upper bound the simulator reports', async () => {
    const world = simulateWorld({ seed: 11, rows: 3_000_000, clickModel: 'additive' });
    const domain = 'feed';
    const train = flatSamplesToDataset(world.flat, { split: 0, domain });
    const test = flatSamplesToDataset(world.flat, { split: 1, domain });
    const upper = world.groundTruth.domains.find((d) => d.name === domain)!.upperBoundTestAuc;
    const model = RuntimeModel.create(
      {
        numeric: train.numeric,
        slots: train.slots,
        pooling: 'mean',
        embeddingDim: 8,
        hidden: [64, 32],
        wide: true,
        optimizer: { sparse: { kind: 'adagrad', lr: 0.1 }, dense: { lr: 1e-3 } },
        seed: 1,
      },
      { backend: 'cpu', threads: 2 },
    );
    const r = await model.train(train.dataset, { epochs: 12, batchSize: 1024, validationFraction: 0.1, earlyStopping: { patience: 2 }, seed: 1 });
    const ev = await model.evaluate(test.dataset);
    console.log(`additive world, ${domain}: test AUC ${ev.auc.toFixed(4)} vs upper bound ${upper.toFixed(4)} (epochs ${r.epochs}, best ${r.bestEpoch})`);
    expect(ev.auc).toBeGreaterThan(upper - 0.005);
    expect(ev.auc).toBeLessThanOrEqual(upper + 0.002);
  }, 600_000);
});
