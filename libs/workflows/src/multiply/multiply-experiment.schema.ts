import { z } from 'zod';
import { recipeSchema } from '../trials/train-trial.schema';
import { architectureSchema, trainingSchema } from '../model/model-recipe.schema';

export const MULTIPLY_STRATEGIES = ['union', 'pretrain_finetune', 'shared_embedding', 'embedding_update'] as const;
export type MultiplyStrategy = (typeof MULTIPLY_STRATEGIES)[number];

const seedSchema = z
  .number()
  .int()
  .min(0)
  .max(2 ** 31);

/**
 * multiply: may other lines' samples improve this line's model? Sources are sample set ids or
 * `line/name`, or `auto`: every set shared with this line that has the target's label semantics and
 * at least one of its feature columns.
 */
export const multiplySpecSchema = z
  .object({
    target: z
      .object({
        /** the target's sample set, or a registered model (its sample set, features, architecture and training) */
        sampleSet: z.string().min(1).optional(),
        model: z.string().min(1).optional(),
        /** default: every column but label, time and keys */
        features: z.array(z.string().min(1)).min(1).optional(),
        /** test split: target rows at or after this time (default: the last 20% of its time range) */
        testFrom: z.number().finite().optional(),
        architecture: architectureSchema.default(architectureSchema.parse({})),
        training: trainingSchema.default(trainingSchema.parse({})),
      })
      .strict()
      .refine((t) => !!t.model !== !!t.sampleSet, {
        message: 'name either a registered model or a sample set',
        path: ['sampleSet'],
      })
      .refine((t) => !(t.model && t.features), {
        message: 'features come from the registered model; leave them out',
        path: ['features'],
      }),
    /** borrowed sets; none (`[]`) only when the one strategy is embedding_update (it trains on the target's own rows) */
    sources: z.union([z.array(z.string().min(1)).max(20), z.literal('auto')]).default([]),
    strategies: z.array(z.enum(MULTIPLY_STRATEGIES)).min(1).default(['union', 'pretrain_finetune', 'shared_embedding']),
    /**
     * union: the loss weight of each borrowed set's rows (the target's rows weigh 1), by source as named in
     * `sources` or as `line/name`; default 1
     */
    sourceWeights: z.record(z.string().min(1), z.number().positive().max(100)).default({}),
    /** pretrain → fine-tune and shared embedding: keep the carried embeddings fixed while training on the target */
    freezeEmbeddings: z.boolean().default(false),
    /** shared embedding: the registered name (default `<line>.<sources>`) and which lines may use it besides this one */
    embedding: z
      .object({
        name: z
          .string()
          .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,150}$/, 'letters, digits and . _ + - only')
          .optional(),
        shareWith: z.array(z.string().min(1)).default([]),
        /**
         * embedding_update: the version this line improves (`name@version`, or a name: its latest); the
         * line must be the embedding's or in its `updatableBy`
         */
        update: z.string().min(1).max(220).optional(),
      })
      .strict()
      .default({ shareWith: [] }),
    /** one comparison per source as well as all sources together */
    perSource: z.boolean().default(true),
    /** training seeds: every model (target-only baseline included) is trained once per seed */
    seeds: z.array(seedSchema).min(1).max(10).default([1, 2, 3]),
    alpha: z.number().gt(0).max(0.5).default(0.05),
    bootstrap: z.number().int().min(50).max(5000).default(300),
    seed: seedSchema.default(1),
  })
  .strict()
  .refine((s) => new Set(s.strategies).size === s.strategies.length, { message: 'duplicate strategies', path: ['strategies'] })
  .refine(
    (s) => s.sources === 'auto' || s.sources.length > 0 || (s.strategies.length === 1 && s.strategies[0] === 'embedding_update'),
    {
      message: 'name at least one source (only embedding_update alone trains on the target’s rows without any)',
      path: ['sources'],
    },
  )
  .refine((s) => s.strategies.includes('embedding_update') === (s.embedding.update !== undefined), {
    message:
      'embedding_update needs embedding.update (the version to improve, name@version), and embedding.update needs embedding_update',
    path: ['embedding', 'update'],
  })
  .refine((s) => new Set(s.seeds).size === s.seeds.length, { message: 'duplicate seeds', path: ['seeds'] });

export type MultiplySpec = z.output<typeof multiplySpecSchema>;

const unionPartSchema = z.object({
  domain: z.string(),
  sampleSetId: z.string(),
  name: z.string(),
  businessLine: z.string(),
  file: z.string(),
  dataVersion: z.string().nullable(),
  label: z.string(),
  positive: z.string().nullable(),
  time: z.string(),
});
export type UnionPartParams = z.output<typeof unionPartSchema>;

/** One model family of a multiply experiment, trained once per seed. */
export const multiplyTrialParamsSchema = z.object({
  /** owner_check: the owner line's model from the parent version against from the new one (see the trial handler) */
  strategy: z.enum(['target_only', ...MULTIPLY_STRATEGIES, 'owner_check']),
  /** domains of the borrowed sets this model uses ([] for target-only) */
  sources: z.array(z.string()),
  /** parts[0] is the target */
  parts: z.array(unionPartSchema).min(1),
  testFrom: z.number(),
  recipe: recipeSchema,
  seeds: z.array(z.number().int()).min(1),
  /** union: loss weight per borrowed domain (absent = 1) */
  weights: z.record(z.string(), z.number()).optional(),
  /** pretrain → fine-tune and shared embedding */
  freezeEmbeddings: z.boolean().optional(),
  /** shared embedding: the name to register it under and its sharing */
  embedding: z.object({ name: z.string(), shareWith: z.array(z.string()) }).optional(),
  /** embedding_update: the version the target's models start from (unfrozen), whose next version the first seed's tables become */
  update: z
    .object({ embeddingId: z.string(), ref: z.string(), name: z.string(), file: z.string(), sha256: z.string() })
    .optional(),
  /** owner_check: the embedding_update trial whose new version is checked, and the line that owns the name */
  updateSeq: z.number().int().optional(),
  ownerLine: z.string().optional(),
});
export type MultiplyTrialParams = z.output<typeof multiplyTrialParamsSchema>;

export const multiplyCompareParamsSchema = z.object({
  baselineSeq: z.number().int(),
  arms: z.array(z.object({ seq: z.number().int(), strategy: z.enum(MULTIPLY_STRATEGIES), sources: z.array(z.string()) })),
  /** embedding_update by another line than the owner: the owner's check of the new version */
  ownerCheckSeq: z.number().int().optional(),
  alpha: z.number(),
  bootstrap: z.number().int(),
  seed: z.number().int(),
});
export type MultiplyCompareParams = z.output<typeof multiplyCompareParamsSchema>;

/**
 * The verdict of one strategy × source against the target-only baseline, from the paired bootstrap
 * interval of the seed-averaged ΔAUC and the per-seed ΔAUC. multiply passes the validation split's
 * numbers (the target's last training rows, fitted by no model); the test split is only reported.
 */
export function multiplyVerdict(
  ciLow: number,
  ciHigh: number,
  perSeed: number[],
): { verdict: 'recommend' | 'no gain' | 'harmful'; reason: string } {
  if (ciLow > 0 && perSeed.every((d) => d > 0)) {
    return { verdict: 'recommend', reason: 'the ΔAUC interval is above 0 and the gain is positive on every seed' };
  }
  if (ciHigh < 0) return { verdict: 'harmful', reason: 'the ΔAUC interval is below 0' };
  return {
    verdict: 'no gain',
    reason: ciLow > 0 ? 'the interval is above 0 but the gain is not positive on every seed' : 'the ΔAUC interval includes 0',
  };
}

/** A source whose label rate is more than 3× or less than a third of the target's is flagged (hygiene, not a refusal). */
export function labelRateFlag(source: number, target: number): string | null {
  if (target <= 0 || source <= 0)
    return source === target ? null : `label rate ${source.toFixed(4)} vs the target's ${target.toFixed(4)}`;
  const ratio = source / target;
  return ratio > 3 || ratio < 1 / 3
    ? `label rate ${source.toFixed(4)} is ${ratio.toFixed(2)}× the target's ${target.toFixed(4)}`
    : null;
}

export const MULTIPLY_RULE =
  "decided on the validation split (the target's last 20% of training rows, the same rows for every model; " +
  'borrowed rows at or after its start are dropped, so no model fits on them): ' +
  'recommend: the paired bootstrap interval of the seed-averaged validation ΔAUC is above 0 and validation ΔAUC > 0 on every seed; ' +
  'harmful: the interval is below 0; otherwise no gain; best: the recommended arm with the largest validation ΔAUC. ' +
  'The ΔAUC reported (deltaAuc, with its interval) is measured on the test split';
