import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BadRequestException } from '@nestjs/common';
import { ZodValidationPipe, uuidParam } from './zod-validation.pipe';
import { canSeeLine, hasRole, requireRole, requireWrite, type RequestScope } from './request-scope';
import { ForbiddenError } from './domain-errors';
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
  const viewer: RequestScope = { user: 'ana', role: 'viewer', lines: ['feed', 'mall'], keyId: 'k1' };
  const engineer: RequestScope = { ...viewer, role: 'engineer' };

  it('sees only its lines; undefined lines = all', () => {
    expect(canSeeLine(viewer, 'feed')).toBe(true);
    expect(canSeeLine(viewer, 'search')).toBe(false);
    expect(canSeeLine({ ...viewer, lines: undefined }, 'search')).toBe(true);
  });

  it('orders roles viewer < engineer < admin', () => {
    expect(hasRole(viewer, 'engineer')).toBe(false);
    expect(hasRole(engineer, 'engineer')).toBe(true);
    expect(hasRole(engineer, 'admin')).toBe(false);
    expect(hasRole({ ...viewer, role: 'admin' }, 'viewer')).toBe(true);
  });

  it('refuses writes naming the role or the line', () => {
    expect(() => requireWrite(viewer, 'feed', 'import sample sets')).toThrow(ForbiddenError);
    expect(() => requireWrite(viewer, 'feed', 'import sample sets')).toThrow(
      /role viewer may not import sample sets \(needs engineer/,
    );
    expect(() => requireWrite(engineer, 'search', 'create models')).toThrow(
      /not scoped to business line "search" \(its lines: feed, mall\)/,
    );
    expect(() => requireWrite(engineer, 'feed', 'create models')).not.toThrow();
    expect(() => requireRole(engineer, 'admin', 'create business lines')).toThrow(/needs admin/);
  });
});
