import { z } from 'zod';

export const trainOptionsSchema = z
  .object({
    epochs: z.number().int().min(1).max(10000).default(1),
    batchSize: z.number().int().min(1).max(1 << 20).default(1024),
    shuffle: z.boolean().default(true),
    /** seed of the epoch shuffles and of the validation split */
    seed: z.number().int().min(0).max(2 ** 52).default(0),
    /** stop after this many steps (benchmarks); -1: no limit */
    maxSteps: z.number().int().min(-1).default(-1),
    /** hold out this fraction of the training rows for validation (ignored when validationData is given) */
    validationFraction: z.number().min(0).max(0.9).default(0),
    earlyStopping: z
      .object({
        patience: z.number().int().min(1).default(2),
        minDelta: z.number().min(0).default(0),
        monitor: z.enum(['auc', 'logloss']).default('auc'),
        restoreBest: z.boolean().default(true),
      })
      .strict()
      .optional(),
    /** progress callback every N steps (and at every epoch end) */
    progressEvery: z.number().int().min(1).default(50),
    /**
     * with early stopping: the validation rows are evaluated before the first step and that score is
     * the best so far (its weights the ones restored when no epoch beats it), as if it ended an epoch
     * before this call: for a call that continues training done before it (bestEpoch -1: none beat it)
     */
    evaluateFirst: z.boolean().default(false),
  })
  .strict();
export type TrainOptions = z.output<typeof trainOptionsSchema>;
export type TrainOptionsInput = z.input<typeof trainOptionsSchema>;

export const evaluateOptionsSchema = z
  .object({
    /** name of a key column (ColumnarDataset.keys / shard key) for group AUC */
    groupKey: z.string().min(1).optional(),
    batchSize: z.number().int().min(1).max(1 << 20).default(8192),
    /**
     * the metrics computed on the native addon's worker thread, not on this one (cpu / cuda; not with
     * groupKey): the same AUC (exact counts), logloss and means summed in the same order (the
     * logarithms may differ in the last bit); only the metrics cross to JavaScript
     */
    offThread: z.boolean().default(false),
  })
  .strict();
export type EvaluateOptionsInput = z.input<typeof evaluateOptionsSchema>;

export const ablateOptionsSchema = z
  .object({
    /** each group: input names (slots or numeric) permuted together */
    groups: z.array(z.array(z.string().min(1)).min(1)).min(1),
    repeats: z.number().int().min(1).max(1000).default(5),
    seed: z.number().int().min(0).max(2 ** 52).default(0),
    batchSize: z.number().int().min(1).max(1 << 20).default(8192),
  })
  .strict();
export type AblateOptionsInput = z.input<typeof ablateOptionsSchema>;

export const transferOptionsSchema = z
  .object({
    /** keep the copied embedding rows fixed during training */
    freeze: z.boolean().default(false),
    /** only these slots (default: every slot whose name and dim match) */
    slots: z.array(z.string().min(1)).optional(),
  })
  .strict();
export type TransferOptionsInput = z.input<typeof transferOptionsSchema>;
