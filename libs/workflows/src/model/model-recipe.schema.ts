import type { ExprTableRef, FeatureExpr } from '../../../samples/src/expr/feature-expr.schema';
import { z } from 'zod';

// by file, not through the @abacus/catalog barrel: this module is part of the browser-safe entry (src/browser.ts)
import { architectureSchema, trainingSchema, type Architecture, type Training } from '../../../catalog/src/model-params.schema';

export { architectureSchema, trainingSchema, type Architecture, type Training };

const ARCH_DEFAULT = architectureSchema.parse({});

/** Start the model's embeddings from a shared embedding (`name@version`), optionally frozen. */
export const modelInitSchema = z
  .object({
    embedding: z.string().min(1).max(220),
    /** keep the carried rows fixed while the model trains */
    freeze: z.boolean().default(false),
  })
  .strict();
export type ModelInitSpec = z.output<typeof modelInitSchema>;

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
    /** with `sampleSet` only (default: trainingSchema's); a registered model brings its own */
    training: trainingSchema.optional(),
    /** test split: rows at or after this time (default: the last 20% of the time range) */
    testFrom: z.number().optional(),
    /** initial embeddings: `{ "embedding": "name@version" }` */
    init: modelInitSchema.optional(),
    /** only rows whose `filter.column` is one of `filter.values` (e.g. one domain of a shared sample set) */
    filter: z
      .object({ column: z.string().min(1), values: z.array(z.string()).min(1) })
      .strict()
      .optional(),
  })
  .strict()
  .refine((m) => !!m.model !== !!m.sampleSet, { message: 'name either a registered model or a sample set', path: ['model'] })
  .refine((m) => !(m.model && m.features), {
    message: 'features come from the registered model; leave them out',
    path: ['features'],
  })
  .refine((m) => !(m.model && m.training), {
    message: 'training comes from the registered model; leave it out, or register a version with these training parameters',
    path: ['training'],
  });

export type ModelRef = z.output<typeof modelRefSchema>;

/** What a trial needs to build samples and train: everything resolved to files and columns. */
export interface ResolvedFeature {
  name: string;
  kind: 'numeric' | 'categorical' | 'multi_id';
  source:
    | { kind: 'column'; column?: string }
    | {
        kind: 'table';
        file: string;
        entityKey: string;
        sampleKey: string;
        timeColumn?: string | null;
        column?: string;
        /** the table's id: its file under the data directory never changes (a store's hosts agree on it, not on paths) */
        version?: string;
      }
    /**
     * a registered expression, its references to other features expanded (libs/samples expr) but those
     * to feature-table features, which `tables` says where to join from (files relative to the data directory)
     */
    | { kind: 'expression'; expression: FeatureExpr; tables?: Record<string, ExprTableRef> };
  transform?:
    { type: 'none' | 'log' | 'standardize' } | { type: 'hash'; hashBuckets: number } | { type: 'buckets'; boundaries: number[] };
}

export interface ModelRecipe {
  sampleSetId: string;
  /** a path under the data directory (uploaded sets) or the store URL of a set registered by reference */
  sampleFile: string;
  /** the set's data version (a registered set's objects pinned at registration, an upload's content hash): the build reads the set through the worker's store and keys on it */
  sampleVersion?: string | null;
  label: string;
  /** the label's event value named at import; null = 0/1 or false/true */
  positive?: string | null;
  time: string | null;
  testFrom: number | null;
  filter: { column: string; values: string[] } | null;
  features: ResolvedFeature[];
  architecture: Architecture;
  training: Training;
  /** registered model this recipe came from, if any */
  modelId: string | null;
  /** the shared embedding its models start from */
  init?: ResolvedInit | null;
}

export interface ResolvedInit {
  embeddingId: string;
  ref: string;
  file: string;
  sha256: string;
  freeze: boolean;
}
