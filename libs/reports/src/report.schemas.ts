import { z } from 'zod';
import parser from 'cron-parser';
import { isTimeZone } from '@abacus/configs';
import { lineName, paginationSchema } from '@abacus/core';

/** A model by name (each fire reports on its latest version) or by the id of one of its versions. */
const modelRef = z.string().min(1).max(200);

/** The subtract options of a report run (the rest as subtract's defaults). */
export const reportSubtractOptionsSchema = z
  .object({
    maxDrop: z.number().min(0).max(0.5).optional(),
    retrainSeeds: z.number().int().min(0).max(10).optional(),
    confirm: z.boolean().optional(),
    batchFraction: z.number().gt(0).max(1).optional(),
    repeats: z.number().int().min(1).max(50).optional(),
    folds: z.number().int().min(2).max(50).optional(),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31)
      .optional(),
  })
  .strict();

/** Drift thresholds; unset = ABACUS_REPORT_PSI_THRESHOLD / ABACUS_REPORT_IV_DRIFT. */
export const reportThresholdsSchema = z
  .object({ psi: z.number().gt(0).max(10).optional(), ivDrift: z.number().gt(0).max(10).optional() })
  .strict();

export const reportOptionsSchema = z
  .object({
    subtract: reportSubtractOptionsSchema.default({}),
    thresholds: reportThresholdsSchema.default({}),
  })
  .strict();
export type ReportOptions = z.output<typeof reportOptionsSchema>;

const emails = z.array(z.string().email().max(320)).max(50);

/** Checks a cron pattern (5 fields, or 6 with seconds) in a time zone; the message of the parser otherwise. */
export function cronProblem(cron: string, tz: string): string | null {
  const fields = cron.trim().split(/\s+/).length;
  if (fields < 5 || fields > 6)
    return `a cron pattern has 5 fields (minute hour day month weekday) or 6 (seconds first); got ${fields}`;
  try {
    parser.parseExpression(cron, { tz }).next();
    return null;
  } catch (err) {
    return `not a valid cron pattern: ${(err as Error).message}`;
  }
}

/** The next fire time of a cron pattern in a time zone (ms), or null. */
export function nextFire(cron: string, tz: string, from = new Date()): number | null {
  try {
    return parser.parseExpression(cron, { tz, currentDate: from }).next().getTime();
  } catch {
    return null;
  }
}

const cronField = z.string().min(1).max(120);
const tzField = z.string().min(1).max(64).refine(isTimeZone, 'an IANA time zone such as UTC or Europe/Berlin');

/** POST /report-schedules */
export const createScheduleSchema = z
  .object({
    model: modelRef,
    businessLine: lineName,
    /** default ABACUS_REPORT_CRON (weekly, Monday 06:00) */
    cron: cronField.optional(),
    /** default ABACUS_REPORT_TZ */
    timezone: tzField.optional(),
    emails: emails.default([]),
    subtract: reportSubtractOptionsSchema.default({}),
    thresholds: reportThresholdsSchema.default({}),
  })
  .strict();
export type CreateSchedule = z.output<typeof createScheduleSchema>;

/** PATCH /report-schedules/:id */
export const updateScheduleSchema = z
  .object({
    cron: cronField.optional(),
    timezone: tzField.optional(),
    emails: emails.optional(),
    subtract: reportSubtractOptionsSchema.optional(),
    thresholds: reportThresholdsSchema.optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: 'nothing to change' });
export type UpdateSchedule = z.output<typeof updateScheduleSchema>;

/** GET /report-schedules */
export const scheduleListQuerySchema = z
  .object({ businessLine: lineName.optional(), model: z.string().min(1).max(200).optional() })
  .strict();
export type ScheduleListQuery = z.output<typeof scheduleListQuerySchema>;

/** POST /reports/run: a report now, outside the schedule */
export const runReportSchema = z
  .object({
    model: modelRef,
    businessLine: lineName,
    /** default: the model's schedule's addresses, if it has one */
    emails: emails.optional(),
    subtract: reportSubtractOptionsSchema.optional(),
    thresholds: reportThresholdsSchema.optional(),
  })
  .strict();
export type RunReport = z.output<typeof runReportSchema>;

/** GET /reports */
export const reportListQuerySchema = paginationSchema
  .extend({
    businessLine: lineName.optional(),
    model: z.string().min(1).max(200).optional(),
    status: z.enum(['running', 'succeeded', 'failed']).optional(),
  })
  .strict();
export type ReportListQuery = z.output<typeof reportListQuerySchema>;
