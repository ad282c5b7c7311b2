import { z } from 'zod';

export const readTableOptionsSchema = z
  .object({
    /** read only these columns (error naming the available ones if one is unknown) */
    columns: z.array(z.string().min(1)).optional(),
    /** override the detected kind, e.g. an integer id column read as categorical */
    kinds: z.record(z.string(), z.enum(['numeric', 'categorical', 'multi_id'])).optional(),
  })
  .strict();

export type ReadTableOptions = z.infer<typeof readTableOptionsSchema>;
