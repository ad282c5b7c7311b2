import { ForbiddenError } from './domain-errors';

/** Roles of API keys, weakest first: each role may do everything the ones before it may. */
export const ROLES = ['viewer', 'engineer', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Who is calling and which business lines they may touch: filled from the caller's API key by the
 * API's global guard, and passed to every service call, so access is decided in one place.
 */
export interface RequestScope {
  /** the key's name (who the key belongs to); recorded as the owner of what it creates */
  user: string;
  role: Role;
  /** business lines the caller may read and write; undefined = all lines (`*`) */
  lines?: string[];
  /** the API key behind the call; null for the platform itself (bootstrap, migrations, tests' setup) */
  keyId: string | null;
}

/** The platform acting on its own behalf (bootstrap of the first key); never the result of a request. */
export const SYSTEM_SCOPE: RequestScope = { user: 'system', role: 'admin', keyId: null };

export function canSeeLine(scope: RequestScope, line: string): boolean {
  return !scope.lines || scope.lines.includes(line);
}

export function hasRole(scope: RequestScope, role: Role): boolean {
  return ROLES.indexOf(scope.role) >= ROLES.indexOf(role);
}

/** 403 unless the caller's role is at least `role`; `action` completes "role viewer may not ...". */
export function requireRole(scope: RequestScope, role: Role, action: string): void {
  if (!hasRole(scope, role)) throw new ForbiddenError(`role ${scope.role} may not ${action} (needs ${role} or above)`);
}

/** 403 unless the caller's key is scoped to `line`. */
export function requireLine(scope: RequestScope, line: string, action: string): void {
  if (!canSeeLine(scope, line)) {
    throw new ForbiddenError(
      `this key is not scoped to business line "${line}" (its lines: ${scope.lines!.join(', ') || 'none'}), so it may not ${action}`,
    );
  }
}

/** Writes into a line: engineer or above, and the key scoped to that line. */
export function requireWrite(scope: RequestScope, line: string, action: string): void {
  requireRole(scope, 'engineer', action);
  requireLine(scope, line, action);
}
