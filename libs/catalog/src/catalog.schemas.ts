import { z } from 'zod';
import { lineName, uuidSchema } from '@abacus/core';
import { featureExprSchema } from '@abacus/samples';
import { architectureSchema, trainingSchema } from './model-params.schema';

export { lineName };

export const objectName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]*$/, 'letters, digits, _ . : - (starting with a letter or digit)');
export const columnName = z.string().min(1).max(200);

export const createBusinessLineSchema = z
  .object({
    name: lineName,
    description: z.string().max(2000).default(''),
  })
  .strict();

const costsSchema = z
  .object({
    storageBytesPerEntity: z.number().nonnegative().optional(),
    fetchBytesPerRequest: z.number().nonnegative().optional(),
    computeCost: z.number().nonnegative().optional(),
    source: z.enum(['measured', 'declared']).default('declared'),
    /** where the values live, for the communication fan-out: user / context once per request, item once per candidate */
    entity: z.enum(['user', 'item', 'context']).optional(),
  })
  .strict();

const transformSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('none') }),
  z.object({
    type: z.literal('hash'),
    hashBuckets: z
      .number()
      .int()
      .min(2)
      .max(1 << 30),
  }),
  z.object({ type: z.literal('buckets'), boundaries: z.array(z.number()).min(1) }),
  z.object({ type: z.literal('log') }),
  z.object({ type: z.literal('standardize') }),
]);

export const createFeatureSchema = z
  .object({
    name: objectName,
    businessLine: lineName,
    /** needed unless the feature is an expression (whose kind is what it gives) */
    kind: z.enum(['numeric', 'categorical', 'multi_id']).optional(),
    description: z.string().max(2000).default(''),
    featureTableId: uuidSchema.optional(),
    sourceColumn: columnName.optional(),
    /** an expression over the columns and earlier rows of `sampleSet` (docs/guide/feature-expressions.md), as JSON */
    expression: featureExprSchema.optional(),
    /** the same in its text form, e.g. "rate(by: [user_id, category], over: 7d)" */
    expressionText: z.string().min(1).max(4000).optional(),
    /** the sample set (name or id) an expression is read over and checked against */
    sampleSet: z.string().min(1).max(200).optional(),
    transform: transformSchema.default({ type: 'none' }),
    costs: costsSchema.default({ source: 'declared' }),
  })
  .strict()
  .superRefine((f, ctx) => {
    const expr = f.expression !== undefined || f.expressionText !== undefined;
    if (f.expression !== undefined && f.expressionText !== undefined)
      ctx.addIssue({ code: 'custom', path: ['expressionText'], message: 'give the expression as JSON (expression) or as text (expressionText), not both' });
    if (expr && !f.sampleSet)
      ctx.addIssue({ code: 'custom', path: ['sampleSet'], message: 'an expression is read over a sample set: name it' });
    if (expr && (f.featureTableId || f.sourceColumn))
      ctx.addIssue({ code: 'custom', path: [f.featureTableId ? 'featureTableId' : 'sourceColumn'], message: 'an expression feature reads its own columns: no featureTableId or sourceColumn' });
    if (!expr && f.sampleSet) ctx.addIssue({ code: 'custom', path: ['sampleSet'], message: 'sampleSet goes with an expression' });
    if (!expr && !f.kind) ctx.addIssue({ code: 'custom', path: ['kind'], message: 'Required (numeric, categorical or multi_id)' });
  });

export const updateFeatureSchema = z
  .object({
    description: z.string().max(2000).optional(),
    transform: transformSchema.optional(),
    costs: costsSchema.optional(),
  })
  .strict()
  .refine((u) => Object.keys(u).length > 0, { message: 'nothing to update' });

/** Listing anything that belongs to a business line: optional line filter and pagination. */
export const lineListQuerySchema = z
  .object({
    businessLine: lineName.optional(),
    page: z.coerce.number().int().min(1).default(1),
    pageSize: z.coerce.number().int().min(1).max(500).default(50),
  })
  .strict();
export type LineListQuery = z.output<typeof lineListQuerySchema>;

export const embeddingListQuerySchema = z
  .object({
    businessLine: lineName.optional(),
    name: z.string().min(1).max(200).optional(),
    page: z.coerce.number().int().min(1).default(1),
    pageSize: z.coerce.number().int().min(1).max(500).default(50),
  })
  .strict();
export type EmbeddingListQuery = z.output<typeof embeddingListQuerySchema>;

const lineOrAll = z.union([lineName, z.literal('*')]);

/** PATCH /embeddings/:name/policy: who may use and who may update every version of a name (the owner line sets it) */
export const embeddingPolicySchema = z
  .object({
    /** lines whose models may start from it ('*': every line) */
    shareWith: z.array(lineOrAll).max(100).optional(),
    /** lines that may publish new versions of it from their own samples ('*': every line; [] : the owner line only) */
    updatableBy: z.array(lineOrAll).max(100).optional(),
  })
  .strict()
  .refine((b) => b.shareWith !== undefined || b.updatableBy !== undefined, { message: 'set shareWith, updatableBy or both' });
export type EmbeddingPolicy = z.output<typeof embeddingPolicySchema>;

export const featureListQuerySchema = z
  .object({
    businessLine: lineName.optional(),
    kind: z.enum(['numeric', 'categorical', 'multi_id']).optional(),
    featureTableId: uuidSchema.optional(),
    /** part of the name, any case */
    name: z.string().trim().min(1).max(200).optional(),
    owner: z.string().min(1).max(200).optional(),
    /** in-model: named by a registered model of its line; candidate: by none */
    role: z.enum(['candidate', 'in-model']).optional(),
    page: z.coerce.number().int().min(1).default(1),
    pageSize: z.coerce.number().int().min(1).max(500).default(100),
  })
  .strict();

/** What a label means, `event->outcome` (e.g. exposure->click, click->order): sets are pooled only within one meaning. */
export const labelSemanticsSchema = z
  .string()
  .max(100)
  .regex(/^[a-z][a-z0-9_]*->[a-z][a-z0-9_]*$/, 'expected event->outcome in lower case, e.g. exposure->click');

/** A comma-separated list of a multipart form field, each item checked by `item`. */
const commaList = (item: z.ZodType<string, string>) =>
  z
    .string()
    .max(20_000)
    .optional()
    .transform((s) =>
      s
        ? s
            .split(',')
            .map((k) => k.trim())
            .filter(Boolean)
        : [],
    )
    .pipe(z.array(item));

/** A yes/no multipart form field (forms carry strings only). */
const formFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'expected true or false' })
  .optional()
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** DataBank search: sample sets the caller may read, by line, label meaning and columns they contain. */
export const sampleSetListQuerySchema = z
  .object({
    businessLine: lineName.optional(),
    labelSemantics: labelSemanticsSchema.optional(),
    /** comma-separated column names the set must all contain */
    hasColumns: commaList(columnName),
    page: z.coerce.number().int().min(1).default(1),
    pageSize: z.coerce.number().int().min(1).max(500).default(50),
  })
  .strict();
export type SampleSetListQuery = z.output<typeof sampleSetListQuerySchema>;

/** Form fields of a sample-set upload (the file comes as multipart part `file`). */
export const importSampleSetSchema = z
  .object({
    name: objectName,
    businessLine: lineName,
    label: columnName,
    /**
     * the label value that counts as the event: label = (value == positive). Needed unless the label
     * holds 0/1 or true/false.
     */
    positive: z.string().min(1).max(200).optional(),
    time: columnName.optional(),
    keys: commaList(columnName),
    shareWith: commaList(z.union([z.literal('*'), lineName])),
    labelSemantics: labelSemanticsSchema.default('exposure->click'),
    /** store NaN / ±Infinity in numeric columns as missing values (with a warning) instead of rejecting the file */
    allowNonFinite: formFlag,
  })
  .strict();

/**
 * A sample set registered by reference (JSON body): Parquet data left where it is, on an S3-compatible
 * store or a shared file system, read by the workers through their caches.
 */
export const registerSampleSetSchema = z
  .object({
    /** s3://bucket/prefix/ or file:///shared/path/ (a folder of Parquet files, hive-partitioned or not, or one file) */
    url: z
      .string()
      .min(1)
      .max(2000)
      .refine((u) => u.startsWith('s3://') || u.startsWith('file:///'), 'expected s3://bucket/prefix/ or file:///absolute/path/'),
    name: objectName,
    businessLine: lineName,
    label: columnName,
    positive: z.string().min(1).max(200).optional(),
    time: columnName.optional(),
    keys: z.array(columnName).max(100).default([]),
    shareWith: z
      .array(z.union([z.literal('*'), lineName]))
      .max(100)
      .default([]),
    labelSemantics: labelSemanticsSchema.default('exposure->click'),
    /** take only the partitions whose `column` value is within [from, to] (inclusive) */
    partitions: z
      .object({
        column: columnName,
        from: z.string().min(1).max(200).optional(),
        to: z.string().min(1).max(200).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/** Form fields of a feature-table upload: every column but the key and time becomes a registered feature. */
export const importFeatureTableSchema = z
  .object({
    name: objectName,
    businessLine: lineName,
    entityKey: columnName,
    time: columnName.optional(),
    allowNonFinite: formFlag,
  })
  .strict();

export { architectureSchema, trainingSchema, type Architecture, type Training } from './model-params.schema';

export const createModelSchema = z
  .object({
    name: objectName,
    businessLine: lineName,
    sampleSetId: uuidSchema,
    features: z.array(columnName).min(1).optional(),
    architecture: architectureSchema.default(architectureSchema.parse({})),
    trainingParams: trainingSchema.default(trainingSchema.parse({})),
  })
  .strict();

export type CreateBusinessLine = z.output<typeof createBusinessLineSchema>;
export type CreateFeature = z.output<typeof createFeatureSchema>;
export type UpdateFeature = z.output<typeof updateFeatureSchema>;
export type FeatureListQuery = z.output<typeof featureListQuerySchema>;
export type ImportSampleSet = z.output<typeof importSampleSetSchema>;
export type RegisterSampleSet = z.output<typeof registerSampleSetSchema>;
export type ImportFeatureTable = z.output<typeof importFeatureTableSchema>;
export type CreateModel = z.output<typeof createModelSchema>;
