import type { ModelSpecInput } from '../model-spec.schema';

/** The reference model of shared/bench/torch_ctr_baseline.py. */
export function ctr26Spec(vocab = 100_000): ModelSpecInput {
  return {
    numeric: Array.from({ length: 13 }, (_, j) => `num${j}`),
    slots: Array.from({ length: 26 }, (_, s) => ({ name: `slot${s}`, vocab })),
    pooling: 'sum',
    embeddingDim: 16,
    wide: false,
    hidden: [512, 256],
    optimizer: { dense: { lr: 1e-3 }, sparse: { kind: 'adam', lr: 1e-3 } },
    seed: 0,
    init: 'torch', // the peer's nn.EmbeddingBag / nn.Linear defaults
  };
}
