import { z } from 'zod';
import { lineName } from '@abacus/catalog';
import { scoreSpecSchema } from '../score/score-experiment.schema';

const common = {
  name: z.string().max(200).default(''),
  businessLine: lineName,
};

/** The body of POST /experiments: one branch per experiment kind, discriminated by `kind`. */
export const createExperimentSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('score'), ...common, spec: scoreSpecSchema }).strict(),
]);

export type CreateExperiment = z.output<typeof createExperimentSchema>;
export type ExperimentKind = CreateExperiment['kind'];

export const experimentListQuerySchema = z.object({
  kind: z.string().optional(),
  status: z.enum(['queued', 'running', 'succeeded', 'failed', 'cancelled']).optional(),
  businessLine: lineName.optional(),
  owner: z.string().optional(),
  page: z.coerce.number().int().min(1).default(1),
  pageSize: z.coerce.number().int().min(1).max(500).default(50),
});
export type ExperimentListQuery = z.output<typeof experimentListQuerySchema>;
