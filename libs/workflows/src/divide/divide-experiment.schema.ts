import { z } from 'zod';
import { LARGE_TIER } from '../../../core/src/tier-alias';

export { LARGE_TIER };
import { modelRefSchema } from '../model/model-recipe.schema';
import { recipeSchema } from '../trials/train-trial.schema';

export const RESOURCES = ['storage', 'communication', 'compute'] as const;
export type Resource = (typeof RESOURCES)[number];
export type Costs = Record<Resource, number>;

const fraction = z
  .number()
  .gt(0, 'a budget is a fraction of the full model’s cost in (0, 1]')
  .max(1, 'a budget is at most 1 (the full model)');

/** one tier's budget: a fraction of the full model's cost, the same for every resource, or per resource */
export const tierBudgetSchema = z.union([
  fraction,
  z.object({ storage: fraction.default(1), communication: fraction.default(1), compute: fraction.default(1) }).strict(),
]);

export function budgetOf(t: z.output<typeof tierBudgetSchema> | z.output<typeof largeBudgetSchema>): Costs {
  return typeof t === 'number' ? { storage: t, communication: t, compute: t } : t;
}

const above = z
  .number()
  .min(1, 'a large tier’s budget is at least the full model’s cost (1) in every resource')
  .max(4, 'a large tier’s budget is at most 4 × the full model’s cost');

/** the large tier's budget: above the full model's cost, the same for every resource or per resource */
export const largeBudgetSchema = z.union([
  z
    .number()
    .gt(1, 'a large tier’s budget is above the full model’s cost (> 1)')
    .max(4, 'a large tier’s budget is at most 4 × the full model’s cost'),
  z
    .object({ storage: above.default(1), communication: above.default(1), compute: above.default(1) })
    .strict()
    .refine((b) => b.storage > 1 || b.communication > 1 || b.compute > 1, {
      message: 'a large tier’s budget is above the full model’s cost in at least one resource',
    }),
]);

/**
 * A tier above the model (off-peak traffic): the same MILP over the model's features and a pool of
 * features the model does not use, on a budget above the full model's cost; published as tier -1
 * (alias `tier-large`).
 */
export const largeTierSchema = z
  .object({
    budget: largeBudgetSchema.default(1.5),
    /**
     * registered features of the line the model does not use (default: all of them that the model's
     * sample set can carry and that have a cost, adopted add candidates first, then by name)
     */
    pool: z.array(z.string().min(1).max(200)).min(1).max(64).optional(),
    /** at most this many pool features (the first of the ordered pool) */
    maxPool: z.number().int().min(1).max(64).default(16),
    /** a wider MLP for the large tier (default: the model's) */
    hidden: z.array(z.number().int().min(1).max(4096)).min(1).max(6).optional(),
  })
  .strict();
export type LargeTierSpec = z.output<typeof largeTierSchema>;

export const divideSpecSchema = z
  .object({
    /** the model to divide: a registered model or a sample set (+ features) */
    model: modelRefSchema,
    /**
     * budget tiers as fractions of the full model's cost per resource, each no larger than the one
     * before in every resource and smaller in at least one; 1 (the full model) is tier-0
     */
    tiers: z.array(tierBudgetSchema).min(1).max(8).default([1, 0.7, 0.5, 0.3]),
    /** a tier above the model, for off-peak traffic (tier -1, alias `tier-large`) */
    large: largeTierSchema.optional(),
    /** per-feature value: the shuffle ablation of the full model (run here), or a finished subtract's shuffle scores */
    value: z.union([z.literal('ablation'), z.object({ subtract: z.string().uuid() }).strict()]).default('ablation'),
    /** pairs among this many most valuable features are ablated jointly; a pair whose joint loss exceeds the sum of its own is kept or dropped together */
    interactionTop: z.number().int().min(0).max(16).default(8),
    /** retraining seeds per tier */
    seeds: z.number().int().min(1).max(10).default(3),
    folds: z.number().int().min(2).max(50).default(10),
    repeats: z.number().int().min(1).max(50).default(3),
    alpha: z.number().gt(0).max(0.5).default(0.05),
    /** the model name the tiers are published under (default: the registered model's, or the sample set's name + "-model") */
    publishAs: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'letters, digits and . _ - only')
      .optional(),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31)
      .default(1),
  })
  .strict()
  .superRefine((s, ctx) => {
    const b = s.tiers.map(budgetOf);
    for (let i = 1; i < b.length; i++) {
      const notLarger = RESOURCES.every((r) => b[i][r] <= b[i - 1][r]);
      const smaller = RESOURCES.some((r) => b[i][r] < b[i - 1][r]);
      if (!notLarger || !smaller) {
        ctx.addIssue({
          code: 'custom',
          path: ['tiers', i],
          message: 'tiers must decrease: each budget no larger than the one before in every resource and smaller in one',
        });
      }
    }
  });
export type DivideSpec = z.output<typeof divideSpecSchema>;

const costsSchema = z.object({ storage: z.number(), communication: z.number(), compute: z.number() });

/** select: interactions, then per tier the MILP and the greedy selection */
export const divideSelectParamsSchema = z.object({
  modelSeq: z.number().int(),
  /** the ablate trial (null: values from a subtract experiment) */
  ablateSeq: z.number().int().nullable(),
  subtractExperimentId: z.string().nullable(),
  budgets: z.array(costsSchema),
  costs: z.record(z.string(), costsSchema),
  interactionTop: z.number().int(),
  folds: z.number().int(),
  repeats: z.number().int(),
  alpha: z.number(),
  seed: z.number().int(),
  /** the large tier: its absolute budget, its features (the model's and the pool) and the wide model's ablation */
  large: z
    .object({
      budget: costsSchema,
      fractions: costsSchema,
      features: z.array(z.string()),
      pool: z.array(z.string()),
      ablateSeq: z.number().int(),
    })
    .nullable()
    .default(null),
});
export type DivideSelectParams = z.output<typeof divideSelectParamsSchema>;

/** one tier: retrain the MILP and the greedy selections on every seed (tier -1: the large tier, on its recipe) */
export const divideTierParamsSchema = z.object({
  selectSeq: z.number().int(),
  tier: z.number().int(),
  recipe: recipeSchema,
  seeds: z.array(z.number().int()).min(1),
});
export type DivideTierParams = z.output<typeof divideTierParamsSchema>;

/** the frontier, and the tiers published as model versions */
export const dividePublishParamsSchema = z.object({
  modelSeq: z.number().int(),
  selectSeq: z.number().int(),
  tierSeqs: z.array(z.number().int()),
  publishAs: z.string(),
  modelId: z.string().nullable(),
  recipe: recipeSchema,
  /** the large tier's recipe (the model's features and the pool, its architecture) */
  largeRecipe: recipeSchema.nullable().default(null),
});
export type DividePublishParams = z.output<typeof dividePublishParamsSchema>;
