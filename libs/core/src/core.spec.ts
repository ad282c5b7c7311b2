import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BadRequestException } from '@nestjs/common';
import { ZodValidationPipe, uuidParam } from './zod-validation.pipe';
import { scopeFromHeaders, canSeeLine } from './request-scope';
import { describeZodError } from './zod-issues';

describe('ZodValidationPipe', () => {
  const schema = z.object({ name: z.string().min(2), spec: z.object({ bins: z.number().int().min(2) }) });

  it('returns parsed values', () => {
    expect(new ZodValidationPipe(schema).transform({ name: 'ab', spec: { bins: 3 } })).toEqual({ name: 'ab', spec: { bins: 3 } });
  });

  it('throws a 400 listing every issue path', () => {
    try {
      new ZodValidationPipe(schema).transform({ name: 'a', spec: { bins: 1.5 } });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(BadRequestException);
      const body = (err as BadRequestException).getResponse() as { issues: { path: string }[] };
      expect(body.issues.map((i) => i.path)).toEqual(['name', 'spec.bins']);
    }
  });

  it('prefixes issue paths with the field of a single value, e.g. a path parameter', () => {
    try {
      uuidParam('id').transform('nope');
      expect.unreachable();
    } catch (err) {
      expect((err as BadRequestException).getResponse()).toMatchObject({
        issues: [{ path: 'id', message: 'must be a UUID' }],
      });
    }
    expect(uuidParam('id').transform('0f8fad5b-d9cb-469f-a165-70867728950e')).toBe('0f8fad5b-d9cb-469f-a165-70867728950e');
  });

  it('describes errors in one line for the CLI and logs', () => {
    const r = schema.safeParse({ name: 1, spec: {} });
    expect(r.success).toBe(false);
    if (!r.success) expect(describeZodError(r.error)).toMatch(/^name: .*; spec\.bins: /);
  });
});

describe('request scope', () => {
  it('reads the caller and their business lines from headers', () => {
    const s = scopeFromHeaders({ 'x-abacus-user': 'ana', 'x-abacus-lines': 'feed, mall,' });
    expect(s).toEqual({ user: 'ana', lines: ['feed', 'mall'] });
    expect(canSeeLine(s, 'feed')).toBe(true);
    expect(canSeeLine(s, 'search')).toBe(false);
    expect(scopeFromHeaders({})).toEqual({ user: 'anonymous', lines: undefined });
  });
});
