import { z } from 'zod';

export const simulateOptionsSchema = z.object({
  seed: z.number().int().min(0).max(0xffffffff),
  rows: z.number().int().min(1000).max(20_000_000),
});

export type SimulateOptions = z.infer<typeof simulateOptionsSchema>;
