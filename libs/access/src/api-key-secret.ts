import { createHash, randomBytes } from 'node:crypto';

/** Every secret starts with this, so a leaked key is recognisable (secret scanners, logs). */
export const KEY_PREFIX = 'abk_';
/** 32 random bytes, base64url without padding */
const SECRET_PATTERN = /^abk_[A-Za-z0-9_-]{43}$/;
/** characters of the secret kept for display: the prefix plus 8 random characters */
const DISPLAY_LENGTH = KEY_PREFIX.length + 8;

export interface NewApiKeySecret {
  secret: string;
  /** non-secret start of the secret, stored for display */
  prefix: string;
  /** hex SHA-256 of the secret: what the database keeps */
  hash: string;
}

/** A fresh key: 256 random bits, so one SHA-256 is enough to store it (no dictionary to guess from). */
export function generateApiKey(): NewApiKeySecret {
  const secret = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { secret, prefix: displayPrefix(secret), hash: hashApiKey(secret) };
}

export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function displayPrefix(secret: string): string {
  return secret.slice(0, DISPLAY_LENGTH);
}

/** The secret if it has the shape of one of our keys, else null (checked before any database lookup). */
export function parseApiKey(raw: string | undefined | null): string | null {
  const s = raw?.trim();
  return s && SECRET_PATTERN.test(s) ? s : null;
}

/** The key from an `Authorization: Bearer <key>` header; undefined when the header is absent. */
export function bearerToken(header: string | string[] | undefined): string | undefined | null {
  const h = Array.isArray(header) ? header[0] : header;
  if (h === undefined || h === '') return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1] : null;
}
