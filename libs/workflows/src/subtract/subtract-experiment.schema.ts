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
    /** validation-split folds the shuffle intervals are computed over */
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
     * how a retraining check trains: `warm` fine-tunes copies of the trained model for `warmEpochs`
     * epoch(s) with the removed inputs switched off, against copies fine-tuned alike with every input
     * on (fast: the models start where the trained one ended); `scratch` trains new models from a
     * random start with and without the features (slower; what `warm` stands in for); `auto` (the
     * default): warm when an epoch of the fitted rows is at least WARM_MIN_STEPS training steps, so
     * the fine-tune has room to move the model off the switched-off inputs, else scratch
     */
    retrain: z.enum(['auto', 'warm', 'scratch']).default('auto'),
    warmEpochs: z.number().int().min(1).max(10).default(1),
    /**
     * a warm check's fine-tune ends after at most this many training steps (the first steps of its
     * seed's shuffled epoch: a random share of the fitted rows); 0 = no cap. On the 500k-row
     * calibration worlds an epoch was about 280 steps; the cap keeps larger sets to about that
     */
    warmMaxSteps: z.number().int().min(0).max(1_000_000).default(300),
    /** seeds (data orders) per warm check: the first `warmSeeds` of the retraining seeds */
    warmSeeds: z.number().int().min(1).max(10).default(3),
    /**
     * past the first rejected batch the rest of the ranking is tried one feature at a time; a feature
     * whose permutation estimate's lower end is at least this is kept without a retraining check
     * (permuting a column the model memorised can cost several times maxDrop without the column being
     * worth anything, so the bar sits well above maxDrop)
     */
    retrainScanBelow: z.number().min(0).max(0.5).default(0.01),
    /**
     * the pruning's decisions (permutation estimates and retraining checks) read at most this many
     * rows of the validation split: a seeded sample of a larger one, held in the worker's memory
     * with its folds and switched-off copies, so the worker's memory does not grow with the set.
     * The confirm step and the reported numbers read every row
     */
    decisionRows: z.number().int().min(10_000).max(100_000_000).default(2_000_000),
    /** retrain without the removable features on fresh seeds and report the real metrics */
    confirm: z.boolean().default(true),
    /**
     * the confirm step fits (with and without the removable features) on `retrainSeeds` fresh seeds,
     * at least this many, and stops as soon as its outcome is decided on the validation split: the
     * paired AUC drop's 99% t interval over the seeds so far lies wholly within maxDrop or wholly
     * beyond it. The test numbers it reports are the means over the seeds fitted. >= retrainSeeds:
     * every seed, always
     */
    confirmMinSeeds: z.number().int().min(2).max(10).default(3),
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
  /** trials planned before warm checks existed retrain from scratch */
  retrain: z.enum(['auto', 'warm', 'scratch']).default('scratch'),
  warmEpochs: z.number().int().min(1).default(1),
  /** trials planned before the cap existed fine-tune whole epochs */
  warmMaxSteps: z.number().int().min(0).default(0),
  /** seeds of a warm check: the first this many of retrainSeeds (all: every seed) */
  warmSeeds: z.number().int().min(1).optional(),
  /**
   * the confirm step's first fresh seeds (none without a confirm step): with ABACUS_CONFIRM_AHEAD the
   * prune trains the whole model on them beside its checks, and the confirm finds those fits done
   */
  confirmSeeds: z.array(z.number().int()).default([]),
  /** trials planned before the cap existed read every validation row */
  decisionRows: z.number().int().min(1).optional(),
});

/**
 * `auto` retraining checks fine-tune (warm) when one epoch of the fitted rows is at least this many
 * steps: on small sets a short fine-tune does not move a model off a feature it memorised (40k-row
 * simulator worlds: noise features removed 94% warm against 98.5% from scratch, same worlds), and
 * training from scratch is cheap there anyway.
 */
export const WARM_MIN_STEPS = 200;
export type PruneTrialParams = z.output<typeof pruneTrialParamsSchema>;
