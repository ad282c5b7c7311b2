import { z } from 'zod';

/** A business line's name: what every row, key scope and audit entry refers to. */
export const lineName = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,62}$/, 'lower-case letters, digits, _ or -, starting with a letter (max 63)');
