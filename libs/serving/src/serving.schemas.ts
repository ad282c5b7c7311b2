import { z } from 'zod';
import { isTimeZone } from '@abacus/configs';
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

/** Lowest tier number: -1, the large tier (above the full model, tier 0); higher numbers are cheaper. */
const tierNumber = z.number().int().min(-1, 'tiers are -1 (the large tier), 0 (the full model) or cheaper (1, 2, …)').max(1000);

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

const timeOfDay = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'a time of day as HH:MM, 00:00–23:59');

export const minutesOf = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** One window of a schedule: on its days, from `from` to `to` (local time; `to` before `from` ends the next day). */
export const scheduleWindowSchema = z
  .object({
    /** the tier preferred inside the window (e.g. -1, the large tier, off-peak) */
    tier: tierNumber,
    /** the days the window starts on (default every day) */
    days: z
      .array(z.enum(WEEKDAYS))
      .min(1)
      .max(7)
      .refine((d) => new Set(d).size === d.length, 'days must be distinct')
      .default([...WEEKDAYS]),
    from: timeOfDay,
    to: timeOfDay,
  })
  .strict()
  .refine((w) => w.from !== w.to, { message: 'a window needs from ≠ to (it cannot be empty or a whole day)', path: ['to'] });
export type ScheduleWindow = z.output<typeof scheduleWindowSchema>;

/** The week's minute intervals a window covers, [start, end) within 0..7×1440 (one crossing the week's end is split). */
export function weekIntervals(w: ScheduleWindow): [number, number][] {
  const week = 7 * 1440;
  const from = minutesOf(w.from);
  const to = minutesOf(w.to);
  const out: [number, number][] = [];
  for (const d of w.days) {
    const start = WEEKDAYS.indexOf(d) * 1440 + from;
    const end = start + ((to - from + 1440) % 1440);
    if (end <= week) out.push([start, end]);
    else out.push([start, week], [0, end - week]);
  }
  return out;
}

/**
 * Time windows, in one IANA time zone, during which a tier is preferred: when a window opens the
 * served model switches to its tier (unless a load signal is above its limit), stepping up inside it
 * stops at that tier, and when it closes a tier better than the full model steps back down. Load still
 * steps down inside a window; cooldown and dwell hold for every switch.
 */
export const scheduleSchema = z
  .object({
    timeZone: z
      .string()
      .min(1)
      .max(100)
      .refine(isTimeZone, 'not an IANA time zone the server knows (e.g. Europe/Berlin, Asia/Shanghai, UTC)'),
    windows: z.array(scheduleWindowSchema).min(1).max(50),
  })
  .strict()
  .superRefine((s, ctx) => {
    const spans = s.windows.map(weekIntervals);
    for (let j = 1; j < spans.length; j++) {
      for (let i = 0; i < j; i++) {
        const hit = spans[j]!.some(([a, b]) => spans[i]!.some(([c, d]) => a < d && c < b));
        if (hit) {
          ctx.addIssue({
            code: 'custom',
            path: ['windows', j],
            message: `overlaps window ${i} (${s.windows[i]!.from}–${s.windows[i]!.to} on ${s.windows[i]!.days.join(', ')})`,
          });
          break;
        }
      }
    }
  });
export type Schedule = z.output<typeof scheduleSchema>;

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
    /** windows in which a tier is preferred (e.g. the large tier off-peak) */
    schedule: scheduleSchema.optional(),
  })
  .strict();
export type ServingPolicy = z.output<typeof servingPolicySchema>;

export const registerServingSchema = z
  .object({
    /** the registered model's name, or the id of one of its versions */
    model: z.string().min(1).max(200),
    businessLine: lineName,
    tiers: z
      .array(tierNumber)
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
    checkScheduleTiers(r.policy, r.tiers, ctx, ['policy']);
  });

/** A schedule's windows must name registered tiers no cheaper than the lowest allowed (issues under `at`). */
export function checkScheduleTiers(policy: ServingPolicy, tiers: number[], ctx: z.RefinementCtx, at: (string | number)[]): void {
  const lowest = policy.lowestTier ?? Math.max(...tiers);
  policy.schedule?.windows.forEach((w, i) => {
    if (!tiers.includes(w.tier)) {
      ctx.addIssue({
        code: 'custom',
        path: [...at, 'schedule', 'windows', i, 'tier'],
        message: `tier ${w.tier} is not one of the registered tiers (${tiers.join(', ')})`,
      });
    } else if (w.tier > lowest) {
      ctx.addIssue({
        code: 'custom',
        path: [...at, 'schedule', 'windows', i, 'tier'],
        message: `tier ${w.tier} is cheaper than the lowest tier allowed (${lowest})`,
      });
    }
  });
  if (!tiers.some((t) => t >= 0)) {
    ctx.addIssue({
      code: 'custom',
      path: ['tiers'],
      message: 'register tier 0 or a cheaper one: the large tier alone cannot be served outside its windows',
    });
  }
}
export type RegisterServing = z.output<typeof registerServingSchema>;

const signalValues = Object.fromEntries(SIGNAL_NAMES.map((s) => [s, bounds[s].optional()])) as {
  [K in SignalName]: z.ZodOptional<z.ZodNumber>;
};

export const servingSignalSchema = z.object({ at: z.iso.datetime({ offset: true }).optional(), ...signalValues }).strict();
export type ServingSignalInput = z.output<typeof servingSignalSchema>;

export const pinSchema = z.object({ tier: tierNumber, reason: z.string().trim().min(1).max(1000) }).strict();
export type PinInput = z.output<typeof pinSchema>;

export const servingIdSchema = uuidSchema;
