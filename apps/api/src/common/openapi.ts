import { z } from 'zod';

/** zod schema → JSON schema for the OpenAPI document, so docs and validation cannot drift apart. */
export function openApiSchema(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}
