import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bearerToken, displayPrefix, generateApiKey, hashApiKey, parseApiKey } from './api-key-secret';
import { createKeySchema, keyLinesSchema } from './access.schemas';

describe('API key secrets', () => {
  it('are abk_ + 32 random bytes in base64url, stored as their SHA-256 with a short display prefix', () => {
    const k = generateApiKey();
    expect(k.secret).toMatch(/^abk_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(k.secret.slice(4), 'base64url')).toHaveLength(32);
    expect(k.hash).toBe(createHash('sha256').update(k.secret).digest('hex'));
    expect(k.prefix).toBe(k.secret.slice(0, 12));
    expect(k.hash).not.toContain(k.secret.slice(4, 12));
    expect(generateApiKey().secret).not.toBe(k.secret);
  });

  it('parse back exactly the generated shape', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        const secret = `abk_${Buffer.from(bytes).toString('base64url')}`;
        expect(parseApiKey(secret)).toBe(secret);
        expect(parseApiKey(` ${secret}\n`)).toBe(secret);
        expect(parseApiKey(secret.slice(0, -1))).toBeNull();
        expect(parseApiKey(`abx_${secret.slice(4)}`)).toBeNull();
        expect(hashApiKey(secret)).toHaveLength(64);
        expect(displayPrefix(secret)).toBe(secret.slice(0, 12));
      }),
    );
    for (const bad of [undefined, null, '', 'abk_', 'Bearer abk_x', `abk_${'a'.repeat(42)}!`, `abk_${'a'.repeat(44)}`]) {
      expect(parseApiKey(bad)).toBeNull();
    }
  });

  it('hash to different values for different secrets', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        fc.pre(a !== b);
        expect(hashApiKey(a)).not.toBe(hashApiKey(b));
      }),
    );
  });

  it('are read from "Authorization: Bearer <key>" only', () => {
    expect(bearerToken(undefined)).toBeUndefined();
    expect(bearerToken('')).toBeUndefined();
    expect(bearerToken('Bearer abk_x')).toBe('abk_x');
    expect(bearerToken('bearer   abk_x ')).toBe('abk_x');
    expect(bearerToken(['Bearer a', 'Bearer b'])).toBe('a');
    expect(bearerToken('Basic dXNlcjpwdw==')).toBeNull();
    expect(bearerToken('Bearer a b')).toBeNull();
  });
});

describe('key creation input', () => {
  it('takes named lines or "*", not both, and one kind of expiry', () => {
    expect(keyLinesSchema.safeParse(['*']).success).toBe(true);
    expect(keyLinesSchema.safeParse(['feed', 'mall']).success).toBe(true);
    expect(keyLinesSchema.safeParse([]).success).toBe(false);
    expect(keyLinesSchema.safeParse(['*', 'feed']).success).toBe(false);
    expect(keyLinesSchema.safeParse(['feed', 'feed']).success).toBe(false);
    expect(keyLinesSchema.safeParse(['Feed']).success).toBe(false);
    const both = createKeySchema.safeParse({
      name: 'ana',
      role: 'viewer',
      lines: ['feed'],
      expiresInDays: 3,
      expiresAt: '2999-01-01T00:00:00Z',
    });
    expect(both.success).toBe(false);
    if (!both.success) expect(both.error.issues[0].path).toEqual(['expiresInDays']);
    const past = createKeySchema.safeParse({ name: 'ana', role: 'viewer', lines: ['feed'], expiresAt: '2001-01-01T00:00:00Z' });
    expect(past.success).toBe(false);
    expect(createKeySchema.safeParse({ name: 'ana', role: 'root', lines: ['*'] }).success).toBe(false);
  });
});
