import { z } from 'zod';

export const simulateOptionsSchema = z.object({
  seed: z.number().int().min(0).max(0xffffffff),
  rows: z.number().int().min(1000).max(20_000_000),
  /**
   * 'full' (default): the click logit also has terms no feature shows directly (the latent
   * user×category affinity, whether the item is among the user's recent items, the overlap of recent
   * categories with the item's) — realistic, and its upper bound is out of reach of any model.
   * 'additive': only per-feature effects a pooled-embedding model can represent (multi-id features
   * act through the mean of per-id effects), so the reported upper bound is reachable.
   */
  clickModel: z.enum(['full', 'additive']).default('full'),
  /**
   * Adds a fourth line (UNRELATED_DOMAIN, 'ads') whose planted effects are unrelated to the other lines':
   * borrowing its samples should not help them. Off (default): the world is exactly the three-line one.
   */
  unrelatedLine: z.boolean().default(false),
  /**
   * Plants effects only expressions carry (see derived-effects.ts): a cross of two impression columns
   * with no main effects, a ratio of two numeric ones, and a (user, item category) click habit over the
   * previous 7 days; their columns (d_region, d_slot, d_spend, d_visits) are added to the samples. Off
   * (default): the world is exactly the one without them.
   */
  derivedEffects: z.boolean().default(false),
});

export type SimulateOptions = z.input<typeof simulateOptionsSchema>;
