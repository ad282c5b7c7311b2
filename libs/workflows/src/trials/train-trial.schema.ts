import { z } from 'zod';
import { exprTableRefSchema, featureExprSchema } from '../../../samples/src/expr/feature-expr.schema';

const featureSchema = z.object({
  name: z.string(),
  kind: z.enum(['numeric', 'categorical', 'multi_id']),
  source: z.union([
    z.object({ kind: z.literal('column'), column: z.string().optional() }),
    z.object({
      kind: z.literal('table'),
      file: z.string(),
      entityKey: z.string(),
      sampleKey: z.string(),
      timeColumn: z.string().nullable().optional(),
      column: z.string().optional(),
      version: z.string().optional(),
    }),
    z.object({
      kind: z.literal('expression'),
      expression: featureExprSchema,
      tables: z.record(z.string(), exprTableRefSchema).optional(),
    }),
  ]),
  transform: z
    .union([
      z.object({ type: z.enum(['none', 'log', 'standardize']) }),
      z.object({ type: z.literal('hash'), hashBuckets: z.number().int() }),
      z.object({ type: z.literal('buckets'), boundaries: z.array(z.number()) }),
    ])
    .optional(),
});

/** A model's start from a shared embedding, resolved at submit (access checked there). */
export const resolvedInitSchema = z.object({
  embeddingId: z.string(),
  /** name@version */
  ref: z.string(),
  /** relative to the data directory */
  file: z.string(),
  sha256: z.string(),
  freeze: z.boolean(),
});

export const recipeSchema = z.object({
  sampleSetId: z.string(),
  sampleFile: z.string(),
  sampleVersion: z.string().nullable().optional(),
  label: z.string(),
  positive: z.string().nullable().optional(),
  time: z.string().nullable(),
  testFrom: z.number().nullable(),
  filter: z.object({ column: z.string(), values: z.array(z.string()) }).nullable(),
  features: z.array(featureSchema).min(1),
  architecture: z.object({
    embeddingDim: z.number().int(),
    pooling: z.enum(['sum', 'mean']),
    hidden: z.array(z.number().int()),
    wide: z.boolean(),
  }),
  training: z.object({
    epochs: z.number().int(),
    batchSize: z.number().int(),
    learningRate: z.number(),
    sparseLearningRate: z.number(),
    sparseOptimizer: z.enum(['adagrad', 'adam']),
    validationFraction: z.number(),
    patience: z.number().int(),
    // trials queued before the option existed: the first epoch shuffled
    firstEpoch: z.enum(['shuffled', 'inOrder']).default('shuffled'),
    seed: z.number().int(),
  }),
  modelId: z.string().nullable(),
  init: resolvedInitSchema.nullable().optional(),
});

/** A `train` trial: build (or reuse) samples, train (or reuse) the model, evaluate on the test split. */
export const trainTrialParamsSchema = z.object({
  role: z.enum(['base', 'augmented', 'pruned', 'leave-one-in']),
  recipe: recipeSchema,
  /** seq of a prune trial: leave out the features it found removable */
  dropRemovableOf: z.number().int().optional(),
  /** the candidate a leave-one-in model adds */
  candidate: z.string().optional(),
  /** train one model per seed and report the mean (retraining noise averaged out); default: the recipe's seed */
  seeds: z.array(z.number().int()).min(1).optional(),
  /** also train the recipe's full feature list on the same seeds and report the difference */
  compareWithFull: z.boolean().optional(),
  /**
   * with compareWithFull: fit the seeds in order, at least `minSeeds` of them, and stop as soon as the
   * outcome is decided on the validation split: the paired drop's t interval (1 - alpha, over the
   * seeds so far) lies wholly at or below maxDrop, or wholly above it. The test split is not read
   * by the decision; the reported numbers are the means over the seeds fitted.
   */
  stopWhenDecided: z.object({ maxDrop: z.number(), minSeeds: z.number().int().min(2), alpha: z.number().gt(0).lt(1) }).optional(),
});
export type TrainTrialParams = z.output<typeof trainTrialParamsSchema>;

/** An `ablate` trial: permutation importance of input groups on a trained model, over test folds. */
/** Rows of a split a shuffle ablation reads by default (subtract: its decisionRows). */
export const ABLATE_MAX_ROWS = 2_000_000;
export const ablateTrialParamsSchema = z.object({
  modelSeq: z.number().int(),
  groups: z.array(z.array(z.string()).min(1)).min(1),
  folds: z.number().int().min(2).max(50),
  repeats: z.number().int().min(1).max(100),
  alpha: z.number(),
  seed: z.number().int(),
  /** write one feature_results row per single-feature group under this scorer */
  scorer: z.string(),
  /** the rows permuted: validation when a decision reads the result, test when it is reported */
  split: z.enum(['validation', 'test']).default('test'),
  /**
   * at most this many rows of the split are ablated (a seeded sample of a larger one, copied once): the
   * worker's memory stays that of these rows whatever the split's size
   */
  maxRows: z.number().int().min(1000).default(ABLATE_MAX_ROWS),
});
export type AblateTrialParams = z.output<typeof ablateTrialParamsSchema>;
