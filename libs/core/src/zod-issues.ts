import type { z } from 'zod';

export interface ValidationIssue {
  path: string;
  message: string;
  code: string;
}

/** Flattens zod issues to `{ path: "spec.binning.maxBins", message }` for HTTP bodies and CLI messages. */
export function formatZodIssues(error: z.ZodError): ValidationIssue[] {
  return error.issues.map((i) => ({
    path: i.path.map(String).join('.') || '(root)',
    message: i.message,
    code: i.code,
  }));
}

export function describeZodError(error: z.ZodError): string {
  return formatZodIssues(error)
    .map((i) => `${i.path}: ${i.message}`)
    .join('; ');
}
