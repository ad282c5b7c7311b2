import { z } from 'zod';
import type { SampleBuildRequest } from './sample-build.types';
import { exprTableRefSchema, featureExprSchema } from '../expr/feature-expr.schema';

const name = z.string().min(1);

export const featureTransformSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('none') }).strict(),
  z.object({ type: z.literal('log') }).strict(),
  z.object({ type: z.literal('standardize') }).strict(),
  z
    .object({
      type: z.literal('hash'),
      hashBuckets: z
        .number()
        .int()
        .min(1)
        .max(2 ** 31 - 1),
    })
    .strict(),
  z
    .object({
      type: z.literal('buckets'),
      boundaries: z
        .array(z.number().finite())
        .min(1)
        .refine((b) => b.every((v, i) => i === 0 || v > b[i - 1]), 'boundaries must be strictly increasing'),
    })
    .strict(),
]);

export const featureSourceSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('column'), column: name.optional() }).strict(),
  z
    .object({
      kind: z.literal('table'),
      file: name,
      entityKey: name,
      sampleKey: name,
      timeColumn: name.nullable().optional(),
      column: name.optional(),
      /** the table's identity where its path is one host's copy (a store's): the build key uses it, not path and times */
      version: z.string().min(1).max(200).optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('expression'),
      expression: featureExprSchema,
      tables: z.record(name, exprTableRefSchema).optional(),
    })
    .strict(),
]);

export const featureDefSchema = z
  .object({
    name,
    kind: z.enum(['numeric', 'categorical', 'multi_id']),
    source: featureSourceSchema,
    transform: featureTransformSchema.optional(),
  })
  .strict()
  .superRefine((f, ctx) => {
    const t = f.transform?.type ?? 'none';
    const numericOnly = t === 'log' || t === 'standardize' || t === 'buckets';
    if ((numericOnly && f.kind !== 'numeric') || (t === 'hash' && f.kind === 'numeric')) {
      ctx.addIssue({
        code: 'custom',
        path: ['transform', 'type'],
        message: `transform '${t}' does not apply to a ${f.kind} feature (log/standardize/buckets: numeric; hash: categorical, multi_id)`,
      });
    }
  });

export const sampleBuildRequestSchema = z
  .object({
    samples: z
      .object({
        file: name,
        version: z.string().min(1).max(200).optional(),
        label: name,
        positive: z.union([z.string(), z.number(), z.boolean()]).optional(),
        time: name.nullable().optional(),
        groupKey: name.nullable().optional(),
        outcomes: z.array(name).max(200).optional(),
      })
      .strict(),
    features: z.array(featureDefSchema),
    split: z
      .object({
        testFrom: z.number().finite().optional(),
        testFraction: z.number().gt(0).lt(1).optional(),
        seed: z.number().int().optional(),
      })
      .strict(),
    filter: z
      .object({ column: name, values: z.array(z.string()).min(1) })
      .strict()
      .optional(),
    maxRows: z.number().int().min(1).optional(),
  })
  .strict()
  .superRefine((req, ctx) => {
    const seen = new Map<string, number>();
    req.features.forEach((f, i) => {
      const first = seen.get(f.name);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['features', i, 'name'],
          message: `duplicate feature name '${f.name}' (also features.${first})`,
        });
      } else seen.set(f.name, i);
      if (f.source.kind === 'table' && f.source.timeColumn && !req.samples.time) {
        ctx.addIssue({
          code: 'custom',
          path: ['features', i, 'source', 'timeColumn'],
          message: 'a point-in-time table needs samples.time',
        });
      }
      if (f.source.kind === 'expression' && !req.samples.time) {
        for (const [n, t] of Object.entries(f.source.tables ?? {}))
          if (t.timeColumn)
            ctx.addIssue({
              code: 'custom',
              path: ['features', i, 'source', 'tables', n, 'timeColumn'],
              message: 'a point-in-time table needs samples.time',
            });
      }
    });
    if (req.split.testFrom !== undefined && !req.samples.time) {
      ctx.addIssue({ code: 'custom', path: ['split', 'testFrom'], message: 'testFrom needs samples.time' });
    }
  });

// the hand-written contract and the schema must describe the same requests
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const contractMatchesSchema: Same<z.input<typeof sampleBuildRequestSchema>, SampleBuildRequest> = true;
void contractMatchesSchema;
