import type { EntityManager } from 'typeorm';
import type { RequestScope } from '@abacus/core';
import { AuditLogEntity } from '@abacus/data';

export interface AuditEntry {
  action: string;
  businessLine?: string | null;
  targetType: string;
  targetId: string;
  details?: Record<string, unknown>;
}

/**
 * Appends an audit entry through the caller's transaction manager, so the entry and the change it
 * describes are written together or not at all. Returns the entry's id.
 */
export async function writeAudit(m: EntityManager, scope: RequestScope, entry: AuditEntry): Promise<string> {
  const res = await m.getRepository(AuditLogEntity).insert({
    actorKeyId: scope.keyId,
    actorName: scope.user,
    actorRole: scope.role,
    action: entry.action,
    businessLine: entry.businessLine ?? null,
    targetType: entry.targetType,
    targetId: entry.targetId,
    details: (entry.details ?? {}) as never,
  });
  return (res.identifiers[0] as { id: string }).id;
}
