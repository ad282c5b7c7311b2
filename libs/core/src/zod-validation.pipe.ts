import { BadRequestException, type PipeTransform } from '@nestjs/common';
import { z } from 'zod';
import { formatZodIssues } from './zod-issues';

/**
 * The one way request input enters the API: parsed by a zod schema, or a 400 naming every issue path.
 * `field` prefixes the paths, for a single value such as a path parameter (`id: must be a UUID`).
 */
export class ZodValidationPipe<S extends z.ZodType> implements PipeTransform<unknown, z.output<S>> {
  constructor(
    private readonly schema: S,
    private readonly options: { field?: string } = {},
  ) {}

  transform(value: unknown): z.output<S> {
    const parsed = this.schema.safeParse(value);
    if (!parsed.success) {
      const field = this.options.field;
      throw new BadRequestException({
        statusCode: 400,
        error: 'Bad Request',
        message: 'Validation failed',
        issues: formatZodIssues(parsed.error).map((i) =>
          field ? { ...i, path: i.path === '(root)' ? field : `${field}.${i.path}` } : i,
        ),
      });
    }
    return parsed.data;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Any 8-4-4-4-12 hex id (what Postgres' uuid type accepts), so a bad id is a 400, never a database error. */
export const uuidSchema = z.string().regex(UUID, 'must be a UUID');

/** `@Param('id', uuidParam('id'))`: a 400 `id: must be a UUID` instead of a database error or a 404. */
export function uuidParam(field: string): ZodValidationPipe<typeof uuidSchema> {
  return new ZodValidationPipe(uuidSchema, { field });
}
