import { z } from 'zod';
import { modelRefSchema } from '../model/model-recipe.schema';

/** The families of candidates a discover proposes (see candidates.ts). */
export const DISCOVER_FAMILIES = [
  'column',
  'log',
  'ratio',
  'product',
  'difference',
  'cross',
  'count',
  'rate',
  'mean',
  'sum',
  'distinct',
  'since',
  'freq',
] as const;

export const discoverSpecSchema = z
  .object({
    /** the base model: a registered model, or a sample set (+ feature list); candidates are read over its set */
    base: modelRefSchema,
    /** families of expressions to propose (default: all) */
    families: z
      .array(z.enum(DISCOVER_FAMILIES))
      .min(1)
      .default([...DISCOVER_FAMILIES]),
    /** window lengths of the aggregates */
    windows: z
      .array(z.string().regex(/^[1-9][0-9]{0,3}[dhm]$/, "a window length such as '7d', '12h' or '30m'"))
      .min(1)
      .max(6)
      .default(['1d', '7d', '30d']),
    /** candidates screened at most */
    maxCandidates: z.number().int().min(1).max(5000).default(2000),
    /** rows of the fitted split the screen reads (a seeded sample of a larger split) */
    screenRows: z.number().int().min(2000).max(2_000_000).default(200_000),
    /** candidates sent to the verified comparison (the best by screen score that add to the base and copy no better one) */
    topK: z.number().int().min(1).max(30).default(10),
    /** the verified comparison: add's settings (see add) */
    repeats: z.number().int().min(1).max(50).default(3),
    folds: z.number().int().min(2).max(50).default(10),
    alpha: z.number().gt(0).max(0.5).default(0.05),
    bootstrap: z.number().int().min(50).max(5000).default(300),
    minGain: z.number().min(0).max(0.1).default(0.001),
    /**
     * base + candidate fits of the comparison: twice add's default, as up to `topK` candidates share
     * the family-wise alpha (a candidate whose gain varies from fold to fold needs them)
     */
    seeds: z.number().int().min(3).max(20).default(10),
    /** register the adopted expressions as candidate features of the line (with their provenance) */
    register: z.boolean().default(true),
    notify: z.boolean().default(false),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31)
      .default(1),
  })
  .strict();

export type DiscoverSpec = z.output<typeof discoverSpecSchema>;

/** The discover trial: screens the candidates and hands the best to the verified comparison's trials. */
export const discoverTrialParamsSchema = z.object({
  baseSeq: z.number().int(),
  /** the trials of the verified comparison, filled in with the chosen candidates when the screen ends */
  augmentedSeq: z.number().int(),
  screenSeq: z.number().int(),
  ablateSeq: z.number().int(),
  compareSeq: z.number().int(),
  families: z.array(z.enum(DISCOVER_FAMILIES)),
  windows: z.array(z.string()),
  maxCandidates: z.number().int(),
  screenRows: z.number().int(),
  topK: z.number().int(),
  alpha: z.number(),
  seed: z.number().int(),
});
export type DiscoverTrialParams = z.output<typeof discoverTrialParamsSchema>;
