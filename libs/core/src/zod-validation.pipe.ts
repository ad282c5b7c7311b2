import { BadRequestException, type PipeTransform } from '@nestjs/common';
import type { z } from 'zod';
import { formatZodIssues } from './zod-issues';

/** The one way request input enters the API: parsed by a zod schema, or a 400 naming every issue path. */
export class ZodValidationPipe<S extends z.ZodType> implements PipeTransform<unknown, z.output<S>> {
  constructor(private readonly schema: S) {}

  transform(value: unknown): z.output<S> {
    const parsed = this.schema.safeParse(value);
    if (!parsed.success) {
      throw new BadRequestException({
        statusCode: 400,
        error: 'Bad Request',
        message: 'Validation failed',
        issues: formatZodIssues(parsed.error),
      });
    }
    return parsed.data;
  }
}
