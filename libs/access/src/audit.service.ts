import type { DataSource } from 'typeorm';
import type { Page, RequestScope } from '@abacus/core';
import { AuditLogEntity } from '@abacus/data';
import type { AuditQuery } from './access.schemas';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The query side of the audit log (entries are written by writeAudit inside each change's transaction). */
export class AuditService {
  constructor(private readonly ds: DataSource) {}

  /** An admin scoped to some lines sees the entries of those lines and their own. */
  async list(q: AuditQuery, scope: RequestScope): Promise<Page<AuditLogEntity>> {
    const qb = this.ds.getRepository(AuditLogEntity).createQueryBuilder('a').orderBy('a.at', 'DESC').addOrderBy('a.id');
    if (scope.lines) {
      qb.andWhere('(a.business_line = ANY(:scopeLines) OR a.actor_key_id = :self)', {
        scopeLines: scope.lines,
        self: scope.keyId ?? null,
      });
    }
    if (q.action) qb.andWhere('a.action = :action', { action: q.action });
    if (q.businessLine) qb.andWhere('a.business_line = :bl', { bl: q.businessLine });
    if (q.actor) {
      if (UUID.test(q.actor))
        qb.andWhere('(a.actor_key_id = :actor OR a.actor_name = :actorName)', { actor: q.actor, actorName: q.actor });
      else qb.andWhere('a.actor_name = :actor', { actor: q.actor });
    }
    if (q.since) qb.andWhere('a.at >= :since', { since: q.since });
    const [items, total] = await qb
      .skip((q.page - 1) * q.pageSize)
      .take(q.pageSize)
      .getManyAndCount();
    return { items, total, page: q.page, pageSize: q.pageSize };
  }
}
