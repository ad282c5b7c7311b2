import { z } from 'zod';

export const scoreTableOptionsSchema = z
  .object({
    label: z.string().min(1),
    /** the event class; default 1 / true / '1' */
    positive: z.union([z.string(), z.number(), z.boolean()]).optional(),
    /** time column; with testFrom, bins are fitted on time < testFrom and PSI compares against time >= testFrom */
    time: z.string().min(1).optional(),
    /** number (same unit as the time column; timestamps are epoch seconds) or an ISO date */
    testFrom: z.union([z.number(), z.string().min(1)]).optional(),
    exclude: z.array(z.string()).default([]),
    /** numeric: quantile pre-bins before merging */
    prebins: z.number().int().min(2).max(1000).default(20),
    maxBins: z.number().int().min(2).max(100).default(10),
    /** numeric: every non-missing bin keeps at least this share of the fitted rows */
    minBinShare: z.number().min(0).max(0.5).default(0.05),
    /** categorical: categories rarer than this share are pooled into one "__other__" bin (0 = off) */
    minCategoryShare: z.number().min(0).max(0.5).default(0),
    /** multi-id: ids rarer than this (weighted) share are pooled into "__other__" */
    minIdShare: z.number().min(0).max(0.5).default(0.001),
    /** additive smoothing applied to every bin of a feature when one of its bins has zero events or non-events */
    smoothing: z.number().min(0).max(10).default(0.5),
  })
  .strict()
  .refine((o) => (o.time === undefined) === (o.testFrom === undefined), { message: 'time and testFrom must be given together' });

export type ScoreTableOptions = z.input<typeof scoreTableOptionsSchema>;
export type ParsedScoreTableOptions = z.output<typeof scoreTableOptionsSchema>;
