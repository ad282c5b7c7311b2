import { z } from 'zod';
import { modelRefSchema } from '../model/model-recipe.schema';

export const subtractSpecSchema = z
  .object({
    /** the model to prune: a registered model, or a sample set (+ feature list) */
    model: modelRefSchema,
    /** how features are ranked: by IV, by shuffle importance on the trained model, or both by mean rank */
    scorers: z
      .array(z.enum(['iv', 'shuffle']))
      .min(1)
      .default(['iv', 'shuffle']),
    /** features removed per round (default: 10% of the features, at least 1) */
    batchSize: z.number().int().min(1).optional(),
    batchFraction: z.number().gt(0).max(1).default(0.1),
    /** largest accepted AUC drop (absolute) of the whole removed group, estimated by permuting it */
    maxDrop: z.number().min(0).max(0.5).default(0.001),
    /** permutations per fold */
    repeats: z.number().int().min(1).max(50).default(3),
    /** test-split folds the intervals are computed over */
    folds: z.number().int().min(2).max(50).default(10),
    alpha: z.number().gt(0).max(0.5).default(0.05),
    /**
     * numeric features correlated beyond this |Pearson r| on the training rows are redundancy
     * candidates: the weaker of each pair is checked by retraining without it (permuting one of two
     * correlated features overstates what it is worth); 1 = off
     */
    redundancyThreshold: z.number().min(0).max(1).default(0.8),
    /**
     * seeds per retraining check: the removal set is checked by retraining with and without it on
     * this many seeds (mean AUC), backing off until the real drop is within maxDrop; 0 = estimate only
     */
    retrainSeeds: z.number().int().min(0).max(10).default(5),
    /**
     * past the first rejected batch the rest of the ranking is tried one feature at a time; a feature
     * whose permutation estimate's lower end is at least this is kept without a retraining check
     * (permuting a column the model memorised can cost several times maxDrop without the column being
     * worth anything, so the bar sits well above maxDrop)
     */
    retrainScanBelow: z.number().min(0).max(0.5).default(0.01),
    /** retrain without the removable features on fresh seeds and report the real metrics */
    confirm: z.boolean().default(true),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31)
      .default(1),
  })
  .strict()
  .refine((s) => s.batchSize === undefined || s.batchFraction === 0.1, {
    message: 'give batchSize or batchFraction, not both',
    path: ['batchSize'],
  });

export type SubtractSpec = z.output<typeof subtractSpecSchema>;

export const pruneTrialParamsSchema = z.object({
  modelSeq: z.number().int(),
  shuffleSeq: z.number().int().nullable(),
  ivSeq: z.number().int().nullable(),
  batchSize: z.number().int().min(1),
  maxDrop: z.number(),
  repeats: z.number().int(),
  folds: z.number().int(),
  alpha: z.number(),
  seed: z.number().int(),
  redundancyThreshold: z.number(),
  /** training seeds of the retraining checks (the first is the base model's) */
  retrainSeeds: z.array(z.number().int()),
  retrainScanBelow: z.number().default(0.01),
});
export type PruneTrialParams = z.output<typeof pruneTrialParamsSchema>;
