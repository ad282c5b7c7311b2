import { z } from 'zod';

/*
 * Pure zod (no other import): the web app's bundle imports these through the experiment schemas
 * (libs/workflows/src/browser.ts), so they must not pull in the catalog's services.
 */

/** Model architecture; mapped onto the runtime's model spec by the workflows. */
export const architectureSchema = z
  .object({
    embeddingDim: z.number().int().min(1).max(256).default(8),
    pooling: z.enum(['sum', 'mean']).default('mean'),
    hidden: z.array(z.number().int().min(1).max(4096)).max(6).default([64, 32]),
    wide: z.boolean().default(true),
    /** serving: candidates scored per request (the fan-out of item features in the cost ledger; default 100) */
    candidatesPerRequest: z.number().int().min(1).max(1_000_000).optional(),
  })
  .strict();

export const trainingSchema = z
  .object({
    epochs: z.number().int().min(1).max(100).default(10),
    batchSize: z
      .number()
      .int()
      .min(16)
      .max(1 << 18)
      .default(1024),
    learningRate: z.number().positive().max(1).default(0.001),
    sparseLearningRate: z.number().positive().max(1).default(0.01),
    sparseOptimizer: z.enum(['adagrad', 'adam']).default('adam'),
    /** rows of the training split held out for early stopping (on validation AUC, best epoch restored) */
    validationFraction: z.number().min(0).max(0.5).default(0.1),
    patience: z.number().int().min(1).max(20).default(2),
    /**
     * how the first epoch reads the fitted rows: 'shuffled' (as every later epoch), or 'inOrder': in
     * row order (time order where the samples have a time column) a chunk at a time, each chunk
     * shuffled, with the numeric inputs normalised on the first chunk, so that a fit can start while
     * its samples are still being built (see docs/guide/experiments.md, "First epoch in order")
     */
    firstEpoch: z.enum(['shuffled', 'inOrder']).default('shuffled'),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31)
      .default(1),
  })
  .strict();

export type Architecture = z.output<typeof architectureSchema>;
export type Training = z.output<typeof trainingSchema>;
