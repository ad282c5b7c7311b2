import { z } from 'zod';

export const readTableOptionsSchema = z
  .object({
    /** read only these columns (error naming the available ones if one is unknown) */
    columns: z.array(z.string().min(1)).optional(),
    /** override the detected kind, e.g. an integer id column read as categorical */
    kinds: z.record(z.string(), z.enum(['numeric', 'categorical', 'multi_id'])).optional(),
    /**
     * at most this many rows: a table with more is read as a seeded sample of that many (the same rows
     * every time for the same data); the row order of a sample is not the file's
     */
    sampleRows: z.number().int().positive().optional(),
  })
  .strict();

export type ReadTableOptions = z.infer<typeof readTableOptionsSchema>;
