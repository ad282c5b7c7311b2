import { z } from 'zod';
// by file, not through a barrel: this module is part of the browser-safe entry (src/browser.ts)
import { lineName } from '../../../core/src/line-name';
import { addSpecSchema } from '../add/add-experiment.schema';
import { scoreSpecSchema } from '../score/score-experiment.schema';
import { subtractSpecSchema } from '../subtract/subtract-experiment.schema';
import { multiplySpecSchema } from '../multiply/multiply-experiment.schema';
import { divideSpecSchema } from '../divide/divide-experiment.schema';
import { discoverSpecSchema } from '../discover/discover-experiment.schema';

const common = {
  name: z.string().max(200).default(''),
  businessLine: lineName,
};

/** The body of POST /experiments: one branch per experiment kind, discriminated by `kind`. */
export const createExperimentSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('score'), ...common, spec: scoreSpecSchema }).strict(),
  z.object({ kind: z.literal('subtract'), ...common, spec: subtractSpecSchema }).strict(),
  z.object({ kind: z.literal('add'), ...common, spec: addSpecSchema }).strict(),
  z.object({ kind: z.literal('multiply'), ...common, spec: multiplySpecSchema }).strict(),
  z.object({ kind: z.literal('divide'), ...common, spec: divideSpecSchema }).strict(),
  z.object({ kind: z.literal('discover'), ...common, spec: discoverSpecSchema }).strict(),
]);

export type CreateExperiment = z.output<typeof createExperimentSchema>;
export type ExperimentKind = CreateExperiment['kind'];

export const experimentListQuerySchema = z
  .object({
    kind: z.enum(['score', 'subtract', 'add', 'multiply', 'divide', 'discover']).optional(),
    status: z.enum(['queued', 'running', 'succeeded', 'failed', 'cancelled']).optional(),
    businessLine: lineName.optional(),
    owner: z.string().min(1).max(200).optional(),
    page: z.coerce.number().int().min(1).default(1),
    pageSize: z.coerce.number().int().min(1).max(500).default(50),
  })
  .strict();
export type ExperimentListQuery = z.output<typeof experimentListQuerySchema>;
