import { z } from 'zod';

export const binningOptionsSchema = z
  .object({
    /** quantile pre-bins of a numeric feature before merging */
    prebins: z.number().int().min(2).max(200).default(20),
    maxBins: z.number().int().min(2).max(100).default(10),
    /** each final bin holds at least this share of the rows */
    minBinShare: z.number().min(0).max(0.5).default(0.05),
    /** categorical: categories rarer than this share are pooled into one "__other__" bin (0 = off) */
    minCategoryShare: z.number().min(0).max(0.5).default(0),
    /** additive smoothing of every bin's counts when one bin of the feature has zero events or non-events */
    smoothing: z.number().min(0).max(10).default(0.5),
  })
  .strict();

export const scoreSpecSchema = z
  .object({
    /** the sample set's id, or its name within the experiment's business line */
    sampleSet: z.string().min(1),
    /** default: every column except the label, the time column and the key columns */
    features: z.array(z.string().min(1)).min(1).optional(),
    /** label value counted as the event; default: the one named at import, else 1 / true */
    positive: z.string().min(1).max(200).optional(),
    binning: binningOptionsSchema.default({ prebins: 20, maxBins: 10, minBinShare: 0.05, minCategoryShare: 0, smoothing: 0.5 }),
    /** PSI between rows before and from this time (default: the last 20% of the sample set's time range) */
    psiSplitTime: z.number().optional(),
    /** features scored per trial: smaller means more trials, finer progress, more parallelism */
    featuresPerTrial: z.number().int().min(1).max(10_000).default(16),
  })
  .strict();

export type ScoreSpec = z.output<typeof scoreSpecSchema>;

/** The spec as stored on the experiment row, after the planner resolved names and defaults. */
export const resolvedScoreSpecSchema = scoreSpecSchema.extend({
  sampleSetId: z.string().uuid(),
  features: z.array(z.string()).min(1),
  psiSplitTime: z.number().nullable(),
});
export type BinningOptions = z.output<typeof binningOptionsSchema>;

/** A score trial carries everything it needs, so other experiment kinds (subtract) can plan one too. */
export const scoreTrialParamsSchema = z.object({
  sampleSetId: z.string().uuid(),
  features: z.array(z.string()).min(1),
  psiSplitTime: z.number().nullable(),
  positive: z.string().optional(),
  binning: binningOptionsSchema,
});
export type ScoreTrialParams = z.output<typeof scoreTrialParamsSchema>;
