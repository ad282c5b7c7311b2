import { z } from 'zod';

const finitePositive = z.number().finite().positive();

export const denseOptimizerSchema = z
  .object({
    kind: z.literal('adam').default('adam'),
    lr: finitePositive.default(1e-3),
    beta1: z.number().min(0).max(0.999999).default(0.9),
    beta2: z.number().min(0).max(0.9999999).default(0.999),
    eps: finitePositive.default(1e-8),
    weightDecay: z.number().min(0).default(0),
  })
  .strict();

export const sparseOptimizerSchema = z
  .object({
    kind: z.enum(['adagrad', 'adam']).default('adam'),
    lr: finitePositive.default(1e-3),
    beta1: z.number().min(0).max(0.999999).default(0.9),
    beta2: z.number().min(0).max(0.9999999).default(0.999),
    eps: finitePositive.default(1e-8),
    /** Adagrad only: starting value of the squared-gradient accumulator */
    initialAccumulator: z.number().min(0).default(0.1),
  })
  .strict();

const name = z.string().min(1).max(200);

/** The CTR model: numeric inputs + sparse slots -> pooled embeddings (+ wide) -> MLP -> logit. */
export const modelSpecSchema = z
  .object({
    /** numeric input names, in column order; normalized with train-set mean / std */
    numeric: z.array(name).default([]),
    /** sparse slots (single or multi-id); ids < 0 are padding; ids must be < vocab */
    slots: z.array(z.object({ name, vocab: z.number().int().positive().max(2 ** 31 - 1) }).strict()).default([]),
    pooling: z.enum(['sum', 'mean']).default('sum'),
    embeddingDim: z.number().int().min(1).max(1024).default(16),
    /** linear part: one weight per numeric input and one per id, added to the logit */
    wide: z.boolean().default(false),
    /** hidden layer sizes of the MLP tower (ReLU); the output layer of width 1 is implied */
    hidden: z.array(z.number().int().positive().max(65536)).max(16).default([256, 128]),
    loss: z.literal('logistic').default('logistic'),
    optimizer: z
      .object({ dense: denseOptimizerSchema.default(denseOptimizerSchema.parse({})), sparse: sparseOptimizerSchema.default(sparseOptimizerSchema.parse({})) })
      .strict()
      .default({ dense: denseOptimizerSchema.parse({}), sparse: sparseOptimizerSchema.parse({}) }),
    seed: z.number().int().min(0).max(2 ** 52).default(0),
    /**
     * Parameter initialisation. 'default': embeddings U(±0.05), MLP weights Glorot uniform, zero
     * biases. 'torch': PyTorch's defaults (nn.EmbeddingBag N(0, 1); nn.Linear weight and bias
     * U(±1/sqrt(fan_in))), as the PyTorch peer of the runtime benchmark.
     */
    init: z.enum(['default', 'torch']).default('default'),
  })
  .strict()
  .superRefine((spec, ctx) => {
    const seen = new Set<string>();
    for (const n of [...spec.numeric, ...spec.slots.map((s) => s.name)]) {
      if (seen.has(n)) ctx.addIssue({ code: 'custom', message: `duplicate input name "${n}"` });
      seen.add(n);
    }
    if (spec.numeric.length + spec.slots.length === 0) ctx.addIssue({ code: 'custom', message: 'the model needs at least one input' });
    const rows = spec.slots.reduce((a, s) => a + s.vocab, 0);
    if (rows * spec.embeddingDim > 2 ** 34) ctx.addIssue({ code: 'custom', message: 'embedding table larger than 2^34 floats' });
  });

export type ModelSpec = z.output<typeof modelSpecSchema>;
export type ModelSpecInput = z.input<typeof modelSpecSchema>;

export const backendChoiceSchema = z.enum(['auto', 'cpu', 'cuda', 'tfjs']);
export type BackendChoice = z.output<typeof backendChoiceSchema>;
export type BackendKind = Exclude<BackendChoice, 'auto'>;

export const createOptionsSchema = z
  .object({
    backend: backendChoiceSchema.default('auto'),
    /** CPU worker threads; default: all hardware threads */
    threads: z.number().int().min(1).max(1024).optional(),
    /** CUDA device index for the cuda backend (default 0; see cudaDeviceCount()) */
    device: z.number().int().min(0).max(1023).optional(),
  })
  .strict();
export type CreateOptions = z.input<typeof createOptionsSchema>;
