import { z } from 'zod';
import { modelRefSchema } from '../model/model-recipe.schema';

export const addSpecSchema = z
  .object({
    /** the base model: a registered model, or a sample set (+ feature list) */
    base: modelRefSchema,
    /** feature names (columns of the sample set or registered features), or `auto`: features measured positive in other business lines */
    candidates: z.union([z.array(z.string().min(1)).min(1), z.literal('auto')]),
    metric: z.literal('auc').default('auc'),
    /** permutations per fold for each candidate's contribution */
    repeats: z.number().int().min(1).max(50).default(3),
    folds: z.number().int().min(2).max(50).default(10),
    /**
     * two-sided significance level, family-wise over the candidates: each candidate's interval is at
     * level alpha / (number of candidates) (Bonferroni), so one noise feature among many is not adopted by chance
     */
    alpha: z.number().gt(0).max(0.5).default(0.05),
    /** bootstrap replicates of the paired base-vs-augmented comparison */
    bootstrap: z.number().int().min(50).max(5000).default(300),
    /**
     * the smallest AUC gain worth a feature (the same scale as subtract's maxDrop): adopt needs a gain
     * estimate at least this large; reject when the interval's upper end is below it
     */
    minGain: z.number().min(0).max(0.1).default(0.001),
    /**
     * base + candidate models for every candidate, even those the validation shuffle screen already
     * rejects (a candidate the screen does not reject always gets them before it can be adopted)
     */
    leaveOneIn: z.boolean().default(false),
    /**
     * training seeds of the leave-one-in check, each paired with the base model on the same seed; seed
     * k is fitted without the k-th of `seeds` equal parts of the training range and judged on it
     * (cross-fitting), so more seeds also means more validation rows behind the verdict
     */
    seeds: z.number().int().min(3).max(20).default(10),
    /** POST the verdicts to the configured webhook */
    notify: z.boolean().default(true),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31)
      .default(1),
  })
  .strict();

export type AddSpec = z.output<typeof addSpecSchema>;

export const compareTrialParamsSchema = z.object({
  baseSeq: z.number().int(),
  augmentedSeq: z.number().int(),
  /** shuffle contributions on the validation split (the screen) */
  screenSeq: z.number().int(),
  /** shuffle contributions on the test split (reported) */
  ablateSeq: z.number().int(),
  /** leave-one-in check for every candidate, not only those the screen does not reject */
  leaveOneInAll: z.boolean(),
  /** training seeds of the leave-one-in check; seed k is judged on validation fold k of seeds.length */
  seeds: z.array(z.number().int()).min(2),
  candidates: z.array(z.string()).min(1),
  alpha: z.number(),
  /** per-candidate level (alpha / candidates) */
  candidateAlpha: z.number(),
  bootstrap: z.number().int(),
  minGain: z.number(),
  notify: z.boolean(),
  seed: z.number().int(),
  /** discover: register the adopted candidates (expressions over this sample set) as features of the line */
  register: z
    .object({
      sampleSetId: z.string(),
      candidates: z.array(
        z.object({
          name: z.string(),
          text: z.string(),
          kind: z.enum(['numeric', 'categorical', 'multi_id']),
          expression: z.record(z.string(), z.unknown()),
        }),
      ),
    })
    .optional(),
});
export type CompareTrialParams = z.output<typeof compareTrialParamsSchema>;
