import { z } from 'zod';
import { columnName, lineName } from '@abacus/catalog';

/** A model by id, by name (its latest version) or name@version. */
const modelRef = z.string().min(1).max(220);
const candidates = z.coerce.number().int().min(1).max(1_000_000);

/** GET /features/costs */
export const costLedgerQuerySchema = z
  .object({
    businessLine: lineName.optional(),
    model: modelRef.optional(),
    /** fan-out of item features; default: the model's architecture.candidatesPerRequest, else 100 */
    candidatesPerRequest: candidates.optional(),
  })
  .strict();
export type CostLedgerQuery = z.output<typeof costLedgerQuerySchema>;

/** Most features one measurement takes (its work grows with them: one forward variant each). */
export const MAX_MEASURED_FEATURES = 200;

/** POST /features/costs/measure */
export const measureCostsSchema = z
  .object({
    businessLine: lineName.optional(),
    model: modelRef.optional(),
    /** registered feature names of `businessLine` (default: all of the line's, or the model's) */
    features: z.array(columnName).min(1).max(MAX_MEASURED_FEATURES).optional(),
    candidatesPerRequest: candidates.optional(),
    /** compute: rows of the fixed synthetic batch (default 4096 on the CPU backend, 65,536 on a GPU) */
    rows: z.number().int().min(64).max(65_536).optional(),
    /** compute: rounds of timings (each subset model beside the full one; the median ratio taken) */
    repeats: z.number().int().min(1).max(41).default(9),
    /** false: storage and communication only */
    compute: z.boolean().default(true),
    /**
     * where the forward is timed (default: ABACUS_COST_MEASURE_ON): auto = a worker with a GPU when
     * one listens, else the api; api; worker (one with a GPU first); gpu (a worker with a GPU only)
     */
    on: z.enum(['auto', 'api', 'worker', 'gpu']).optional(),
  })
  .strict()
  .refine((b) => b.model || b.businessLine, { message: 'name a businessLine or a model' });
export type MeasureCosts = z.output<typeof measureCostsSchema>;
