/**
 * Who is calling and which business lines they may see. Today it comes from request headers
 * (x-abacus-user, x-abacus-lines); API keys with roles will fill the same object later, so every
 * query that takes a RequestScope is already filtered in one place.
 */
export interface RequestScope {
  user: string;
  /** business lines the caller may read; undefined = all */
  lines?: string[];
}

export const ANONYMOUS_SCOPE: RequestScope = { user: 'anonymous' };

export function scopeFromHeaders(headers: Record<string, string | string[] | undefined>): RequestScope {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const user = one(headers['x-abacus-user'])?.trim() || 'anonymous';
  const linesRaw = one(headers['x-abacus-lines']);
  const lines = linesRaw
    ? linesRaw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;
  return { user, lines };
}

export function canSeeLine(scope: RequestScope, line: string): boolean {
  return !scope.lines || scope.lines.includes(line);
}
