import { z } from 'zod';

/**
 * A feature expression: a typed tree over the raw columns of a sample set (the current row), other
 * registered features (`ref`), and point-in-time aggregates over the set's earlier rows. It is kept
 * as JSON (this schema), compiled to the sample builder's SQL (feature-expr.sql.ts), and written and
 * read as text by feature-expr.text.ts.
 *
 * Row-level nodes read the impression's own row only (never its label). Window nodes (`window`,
 * `freq`, `last`, `since`) read other rows of the set, and only rows strictly before the impression's
 * time: the frame of every aggregate ends before the row's own time and leaves out every row at that
 * time, its own included (see feature-expr.sql.ts). The label is readable only as the click rate of
 * those earlier rows (`window` with agg `rate`).
 */
export type FeatureExpr =
  | { col: string }
  | { ref: string }
  | { num: number }
  | { op: 'add' | 'sub' | 'mul' | 'div'; args: [FeatureExpr, FeatureExpr] }
  | { op: 'log'; arg: FeatureExpr }
  | { op: 'clip'; arg: FeatureExpr; min?: number; max?: number }
  | { op: 'bucketize'; arg: FeatureExpr; boundaries: number[] }
  | { op: 'cross'; args: FeatureExpr[]; buckets: number }
  | { op: 'freq'; arg: FeatureExpr }
  | { op: 'window'; agg: WindowAgg; by: FeatureExpr[]; of?: FeatureExpr; over: string }
  | { op: 'last'; by: FeatureExpr[]; of: FeatureExpr; n: number }
  | { op: 'since'; by: FeatureExpr[] };

export type WindowAgg = 'count' | 'sum' | 'mean' | 'distinct' | 'rate';
export const WINDOW_AGGS: readonly WindowAgg[] = ['count', 'sum', 'mean', 'distinct', 'rate'];

/** the most buckets a cross may hash into (its vocabulary: an embedding table of that many rows) */
export const MAX_CROSS_BUCKETS = 1 << 24;
/** the longest window */
export const MAX_WINDOW_SECONDS = 400 * 86_400;
/** nodes an expression (with the features it refers to expanded) may hold at most */
export const MAX_EXPR_NODES = 64;
/** how deep an expression may nest */
export const MAX_EXPR_DEPTH = 10;
/** values a `last` sequence holds at most */
export const MAX_LAST_N = 50;

const DURATION = /^([1-9][0-9]{0,5})([dhm])$/;

/** Seconds of a window length: '7d', '12h', '30m'. */
export function durationSeconds(over: string): number {
  const m = DURATION.exec(over);
  if (!m) throw new Error(`not a duration: ${over}`);
  return Number(m[1]) * (m[2] === 'd' ? 86_400 : m[2] === 'h' ? 3_600 : 60);
}

const finite = z.number().finite();
const name = z.string().min(1).max(200);

/**
 * A feature-table column an expression reads by `ref`: joined like a table feature (point-in-time on
 * `timeColumn`: the latest table row at or before the impression's time; without one, a snapshot keyed
 * by `entityKey`), then read like a column of the row, its own or (inside an aggregate) earlier rows'.
 */
export interface ExprTableRef {
  /** what the expression reads it as: a number, a category, a list of ids */
  kind: 'numeric' | 'categorical' | 'multi_id';
  file: string;
  entityKey: string;
  sampleKey: string;
  timeColumn?: string | null;
  column: string;
  /** the table's identity where its path is one host's copy (a store's): build keys use it, not path and times */
  version?: string;
}

export const exprTableRefSchema: z.ZodType<ExprTableRef, ExprTableRef> = z
  .object({
    kind: z.enum(['numeric', 'categorical', 'multi_id']),
    file: name,
    entityKey: name,
    sampleKey: name,
    timeColumn: name.nullable().optional(),
    column: name,
    version: z.string().min(1).max(200).optional(),
  })
  .strict();
const duration = z
  .string()
  .regex(DURATION, "a window length such as '7d', '12h' or '30m'")
  .refine((s) => !DURATION.test(s) || durationSeconds(s) <= MAX_WINDOW_SECONDS, 'a window of at most 400 days');

const node = (shape: z.ZodRawShape) => z.object(shape).strict();
const exprs = (min: number, max: number) => z.array(z.lazy(() => featureExprSchema)).min(min).max(max);
const sub = z.lazy(() => featureExprSchema);
const binary = (op: string) => node({ op: z.literal(op), args: z.tuple([sub, sub]) });

/** each operator's node */
const OPS: Record<string, z.ZodType> = {
  add: binary('add'),
  sub: binary('sub'),
  mul: binary('mul'),
  div: binary('div'),
  log: node({ op: z.literal('log'), arg: sub }),
  clip: node({ op: z.literal('clip'), arg: sub, min: finite.optional(), max: finite.optional() }).superRefine((c, ctx) => {
    if (c.min === undefined && c.max === undefined) ctx.addIssue({ code: 'custom', path: ['min'], message: 'give min, max or both' });
    else if (c.min !== undefined && c.max !== undefined && !((c.min as number) < (c.max as number)))
      ctx.addIssue({ code: 'custom', path: ['max'], message: 'max must be above min' });
  }),
  bucketize: node({
    op: z.literal('bucketize'),
    arg: sub,
    boundaries: z
      .array(finite)
      .min(1)
      .max(256)
      .refine((b) => b.every((v, i) => i === 0 || v > b[i - 1]), 'boundaries must be strictly increasing'),
  }),
  cross: node({
    op: z.literal('cross'),
    args: exprs(2, 3),
    buckets: z
      .number()
      .int()
      .min(2)
      .max(MAX_CROSS_BUCKETS, `a cross hashes into at most ${MAX_CROSS_BUCKETS} buckets (2^24)`),
  }),
  freq: node({ op: z.literal('freq'), arg: sub }),
  window: node({ op: z.literal('window'), agg: z.enum(WINDOW_AGGS), by: exprs(1, 3), of: sub.optional(), over: duration }),
  last: node({ op: z.literal('last'), by: exprs(1, 3), of: sub, n: z.number().int().min(1).max(MAX_LAST_N) }),
  since: node({ op: z.literal('since'), by: exprs(1, 3) }),
};
const LEAVES: Record<string, z.ZodType> = {
  col: node({ col: name }),
  ref: node({ ref: name }),
  num: node({ num: finite }),
};

/**
 * The JSON form of an expression. A node is picked by its `op` (or its `col` / `ref` / `num` key), so
 * an error names the path inside the expression where it lies (e.g. args.0.by.1.col).
 */
// typed as reading a FeatureExpr (what a well-formed request holds); it checks any JSON
export const featureExprSchema: z.ZodType<FeatureExpr, FeatureExpr> = z.lazy(() =>
  z.unknown().transform((v, ctx) => {
    let s: z.ZodType | undefined;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const o = v as Record<string, unknown>;
      if ('op' in o) {
        s = typeof o.op === 'string' && Object.hasOwn(OPS, o.op) ? OPS[o.op] : undefined;
        if (!s) {
          ctx.addIssue({ code: 'custom', path: ['op'], message: `unknown operator ${JSON.stringify(o.op)} (one of ${Object.keys(OPS).join(', ')})` });
          return z.NEVER;
        }
      } else s = Object.keys(LEAVES).map((k) => (k in o ? LEAVES[k] : undefined)).find(Boolean);
    }
    if (!s) {
      ctx.addIssue({ code: 'custom', message: 'expected an expression node: {col}, {ref}, {num} or {op, ...}' });
      return z.NEVER;
    }
    const r = s.safeParse(v);
    if (!r.success) {
      for (const i of r.error.issues) ctx.addIssue({ code: 'custom', path: i.path as PropertyKey[], message: i.message });
      return z.NEVER;
    }
    return r.data as FeatureExpr;
  }),
) as unknown as z.ZodType<FeatureExpr, FeatureExpr>;
