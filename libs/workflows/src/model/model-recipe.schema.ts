import { z } from 'zod';

/** Model architecture as experiments specify it; mapped onto the runtime's model spec. */
export const architectureSchema = z
  .object({
    embeddingDim: z.number().int().min(1).max(256).default(8),
    pooling: z.enum(['sum', 'mean']).default('mean'),
    hidden: z.array(z.number().int().min(1).max(4096)).max(6).default([64, 32]),
    wide: z.boolean().default(true),
  })
  .strict();

export const trainingSchema = z
  .object({
    epochs: z.number().int().min(1).max(100).default(3),
    batchSize: z.number().int().min(16).max(1 << 18).default(1024),
    learningRate: z.number().positive().max(1).default(0.003),
    sparseLearningRate: z.number().positive().max(1).default(0.02),
    sparseOptimizer: z.enum(['adagrad', 'adam']).default('adam'),
    /** rows of the training split held out for early stopping */
    validationFraction: z.number().min(0).max(0.5).default(0.1),
    patience: z.number().int().min(1).max(20).default(1),
    seed: z.number().int().min(0).max(2 ** 31).default(1),
  })
  .strict();

export type Architecture = z.output<typeof architectureSchema>;
export type Training = z.output<typeof trainingSchema>;

const ARCH_DEFAULT = architectureSchema.parse({});
const TRAIN_DEFAULT = trainingSchema.parse({});

/**
 * The base model of an add/subtract experiment: a registered model (by name or id), or a sample set
 * with an optional feature list (default: every column but label, time and keys).
 */
export const modelRefSchema = z
  .object({
    model: z.string().min(1).optional(),
    sampleSet: z.string().min(1).optional(),
    features: z.array(z.string().min(1)).min(1).optional(),
    architecture: architectureSchema.default(ARCH_DEFAULT),
    training: trainingSchema.default(TRAIN_DEFAULT),
    /** test split: rows at or after this time (default: the last 20% of the time range) */
    testFrom: z.number().optional(),
    /** only rows whose `filter.column` is one of `filter.values` (e.g. one domain of a shared sample set) */
    filter: z.object({ column: z.string().min(1), values: z.array(z.string()).min(1) }).strict().optional(),
  })
  .strict()
  .refine((m) => !!m.model !== !!m.sampleSet, { message: 'name either a registered model or a sample set', path: ['model'] })
  .refine((m) => !(m.model && m.features), { message: 'features come from the registered model; leave them out', path: ['features'] });

export type ModelRef = z.output<typeof modelRefSchema>;

/** What a trial needs to build samples and train: everything resolved to files and columns. */
export interface ResolvedFeature {
  name: string;
  kind: 'numeric' | 'categorical' | 'multi_id';
  source:
    | { kind: 'column'; column?: string }
    | { kind: 'table'; file: string; entityKey: string; sampleKey: string; timeColumn?: string | null; column?: string };
  transform?: { type: 'none' | 'log' | 'standardize' } | { type: 'hash'; hashBuckets: number } | { type: 'buckets'; boundaries: number[] };
}

export interface ModelRecipe {
  sampleSetId: string;
  sampleFile: string;
  label: string;
  time: string | null;
  testFrom: number | null;
  filter: { column: string; values: string[] } | null;
  features: ResolvedFeature[];
  architecture: Architecture;
  training: Training;
  /** registered model this recipe came from, if any */
  modelId: string | null;
}
