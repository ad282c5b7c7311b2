import { z } from 'zod';
import { ROLES, lineName, paginationSchema } from '@abacus/core';

/** A key's business lines: names, or ['*'] for all of them. */
export const keyLinesSchema = z
  .array(z.union([z.literal('*'), lineName]))
  .min(1, 'at least one business line, or "*" for all')
  .refine((ls) => !ls.includes('*') || ls.length === 1, '"*" (all lines) cannot be combined with named lines')
  .refine((ls) => new Set(ls).size === ls.length, 'duplicate business lines');

export const keyNameSchema = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.@:-]*$/, 'letters, digits, _ . @ : - (starting with a letter or digit)');

/** POST /keys. Expiry: an absolute time or a number of days from now, not both. */
export const createKeySchema = z
  .object({
    name: keyNameSchema,
    role: z.enum(ROLES),
    lines: keyLinesSchema,
    expiresAt: z.iso
      .datetime({ offset: true })
      .transform((s) => new Date(s))
      .refine((d) => d.getTime() > Date.now(), 'must be in the future')
      .optional(),
    expiresInDays: z.number().int().min(1).max(3650).optional(),
  })
  .strict()
  .refine((b) => b.expiresAt === undefined || b.expiresInDays === undefined, {
    message: 'give expiresAt or expiresInDays, not both',
    path: ['expiresInDays'],
  });
export type CreateKey = z.output<typeof createKeySchema>;

/** Actions the platform records; the column is free text so later areas (policies, serving) add theirs. */
export const AUDIT_ACTIONS = [
  'key.created',
  'key.revoked',
  'business_line.created',
  'sample_set.imported',
  'feature_table.imported',
  'feature.registered',
  'feature.updated',
  'feature.costs_measured',
  'model.created',
  'experiment.submitted',
  'experiment.cancelled',
] as const;

/** GET /audit */
export const auditQuerySchema = paginationSchema.extend({
  action: z
    .string()
    .regex(/^[a-z_]+\.[a-z_]+$/, 'an action such as experiment.submitted')
    .optional(),
  businessLine: lineName.optional(),
  /** the actor's key name or key id */
  actor: z.string().min(1).max(100).optional(),
  since: z.iso
    .datetime({ offset: true })
    .transform((s) => new Date(s))
    .optional(),
});
export type AuditQuery = z.output<typeof auditQuerySchema>;
