import { z } from 'zod';
import { lineName, uuidSchema } from '@abacus/core';

/** The signals a served model reports; each policy threshold refers to one of them. */
export const SIGNAL_NAMES = ['cpu', 'gpu', 'p99LatencyMs', 'errorRate', 'qps'] as const;
export type SignalName = (typeof SIGNAL_NAMES)[number];

const bounds: Record<SignalName, z.ZodNumber> = {
  cpu: z.number().min(0).max(1),
  gpu: z.number().min(0).max(1),
  p99LatencyMs: z.number().min(0).max(3_600_000),
  errorRate: z.number().min(0).max(1),
  qps: z.number().min(0).max(1e9),
};

/**
 * One signal's band: above `stepDownAbove` asks for a cheaper tier, below `stepUpBelow` allows a
 * better one; in between (the hysteresis band) the tier holds.
 */
const band = (s: SignalName) =>
  z
    .object({ stepDownAbove: bounds[s].optional(), stepUpBelow: bounds[s].optional() })
    .strict()
    .superRefine((b, ctx) => {
      if (b.stepDownAbove !== undefined && b.stepUpBelow !== undefined && !(b.stepUpBelow < b.stepDownAbove)) {
        ctx.addIssue({
          code: 'custom',
          path: ['stepUpBelow'],
          message: `must be below stepDownAbove (${b.stepDownAbove}): the band between them is the hysteresis`,
        });
      }
    });

export const servingPolicySchema = z
  .object({
    signals: z
      .object({
        cpu: band('cpu').optional(),
        gpu: band('gpu').optional(),
        p99LatencyMs: band('p99LatencyMs').optional(),
        errorRate: band('errorRate').optional(),
        qps: band('qps').optional(),
      })
      .strict()
      .default({}),
    /** no automatic switch this long after any switch */
    cooldownSeconds: z.number().int().min(0).max(86_400).default(60),
    /** a tier is kept at least this long once entered */
    minDwellSeconds: z.number().int().min(0).max(86_400).default(120),
    /** the cheapest tier automatic switching may step down to (default: the highest registered tier) */
    lowestTier: z.number().int().min(0).max(1000).optional(),
  })
  .strict();
export type ServingPolicy = z.output<typeof servingPolicySchema>;

export const registerServingSchema = z
  .object({
    /** the registered model's name, or the id of one of its versions */
    model: z.string().min(1).max(200),
    businessLine: lineName,
    tiers: z
      .array(z.number().int().min(0).max(1000))
      .min(1)
      .max(100)
      .refine((t) => new Set(t).size === t.length, 'tiers must be distinct'),
    webhookUrl: z
      .string()
      .max(2000)
      .refine((u) => {
        try {
          return /^https?:$/.test(new URL(u).protocol);
        } catch {
          return false;
        }
      }, 'must be an http or https URL'),
    /** HMAC-SHA256 key of the x-abacus-signature header of this served model's webhooks */
    secret: z.string().min(16, 'at least 16 characters').max(256),
    policy: servingPolicySchema.default({ signals: {}, cooldownSeconds: 60, minDwellSeconds: 120 }),
  })
  .strict()
  .superRefine((r, ctx) => {
    const top = Math.max(...r.tiers);
    if (r.policy.lowestTier !== undefined && !r.tiers.includes(r.policy.lowestTier)) {
      ctx.addIssue({
        code: 'custom',
        path: ['policy', 'lowestTier'],
        message: `must be one of the registered tiers (${r.tiers.join(', ')}; highest ${top})`,
      });
    }
  });
export type RegisterServing = z.output<typeof registerServingSchema>;

const signalValues = Object.fromEntries(SIGNAL_NAMES.map((s) => [s, bounds[s].optional()])) as {
  [K in SignalName]: z.ZodOptional<z.ZodNumber>;
};

export const servingSignalSchema = z.object({ at: z.iso.datetime({ offset: true }).optional(), ...signalValues }).strict();
export type ServingSignalInput = z.output<typeof servingSignalSchema>;

export const pinSchema = z
  .object({ tier: z.number().int().min(0).max(1000), reason: z.string().trim().min(1).max(1000) })
  .strict();
export type PinInput = z.output<typeof pinSchema>;

export const servingIdSchema = uuidSchema;
