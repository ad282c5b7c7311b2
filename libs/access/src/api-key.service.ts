import type { DataSource } from 'typeorm';
import {
  ConflictError,
  ForbiddenError,
  InvalidInputError,
  NotFoundError,
  UnauthenticatedError,
  requireRole,
  type RequestScope,
} from '@abacus/core';
import { ApiKeyEntity, BusinessLineEntity } from '@abacus/data';
import type { CreateKey } from './access.schemas';
import { displayPrefix, generateApiKey, hashApiKey, parseApiKey } from './api-key-secret';
import { writeAudit } from './audit-writer';

const DAY_MS = 86_400_000;
/** last_used_at is refreshed at most this often, so authenticating is not a write per request */
const LAST_USED_RESOLUTION = '1 minute';

export interface CreatedApiKey {
  key: ApiKeyEntity;
  /** shown once; only its hash is stored */
  secret: string;
}

/** Creates, lists, revokes API keys and turns a presented secret into a RequestScope. */
export class ApiKeyService {
  /** live keys by hash, for `cacheMs`: requests then skip Postgres for authentication */
  private readonly cache = new Map<string, { key: ApiKeyEntity; until: number }>();

  constructor(
    private readonly ds: DataSource,
    private readonly opts: {
      cacheMs?: number;
      /** tells the other API processes about a revocation, and this one about theirs */
      revocations?: { publish(keyId: string): Promise<void>; onRevoked(fn: () => void): void; close(): Promise<void> };
    } = {},
  ) {
    opts.revocations?.onRevoked(() => this.cache.clear());
  }

  async onModuleDestroy(): Promise<void> {
    await this.opts.revocations?.close();
  }

  /** Admin only; the key row and its audit entry are written in one transaction. */
  async create(input: CreateKey, scope: RequestScope): Promise<CreatedApiKey> {
    requireRole(scope, 'admin', 'create API keys');
    // an admin scoped to some lines hands out keys for those lines only, never wider ones
    if (scope.lines) {
      const outside = input.lines.filter((l) => l === '*' || !scope.lines!.includes(l));
      if (outside.length) {
        throw new ForbiddenError(
          `this key is scoped to business lines ${scope.lines.join(', ')} and may not create keys for ${outside.map((l) => `"${l}"`).join(', ')}`,
        );
      }
    }
    if (!input.lines.includes('*')) {
      const known = await this.ds
        .getRepository(BusinessLineEntity)
        .createQueryBuilder('b')
        .where('b.name = ANY(:names)', { names: input.lines })
        .getMany();
      input.lines.forEach((l, i) => {
        if (!known.some((k) => k.name === l)) throw new InvalidInputError(`lines.${i}`, `unknown business line "${l}"`);
      });
    }
    const expiresAt = input.expiresAt ?? (input.expiresInDays ? new Date(Date.now() + input.expiresInDays * DAY_MS) : null);
    const { secret, prefix, hash } = generateApiKey();
    const key = await this.ds.transaction(async (m) => {
      const repo = m.getRepository(ApiKeyEntity);
      const row = await repo.save(
        repo.create({ name: input.name, prefix, hash, role: input.role, lines: input.lines, createdBy: scope.user, expiresAt }),
      );
      await writeAudit(m, scope, {
        action: 'key.created',
        targetType: 'api_key',
        targetId: row.id,
        details: { name: row.name, prefix, role: row.role, lines: row.lines, expiresAt },
      });
      return row;
    });
    return { key: this.withoutHash(key), secret };
  }

  /** An admin scoped to some lines sees only keys within those lines (never all-line keys). */
  async list(scope: RequestScope): Promise<ApiKeyEntity[]> {
    requireRole(scope, 'admin', 'list API keys');
    const qb = this.ds.getRepository(ApiKeyEntity).createQueryBuilder('k').orderBy('k.created_at', 'DESC');
    if (scope.lines) qb.where('k.lines <@ CAST(:lines AS jsonb)', { lines: JSON.stringify(scope.lines) });
    return qb.getMany();
  }

  private visible(k: ApiKeyEntity, scope: RequestScope): boolean {
    return !scope.lines || k.lines.every((l) => scope.lines!.includes(l));
  }

  async get(id: string): Promise<ApiKeyEntity> {
    const k = await this.ds.getRepository(ApiKeyEntity).findOneBy({ id });
    if (!k) throw new NotFoundError('API key', id);
    return k;
  }

  /** Admin only; revoking twice is a conflict (the first revocation's time and author stay). */
  async revoke(id: string, scope: RequestScope): Promise<ApiKeyEntity> {
    requireRole(scope, 'admin', 'revoke API keys');
    await this.ds.transaction(async (m) => {
      const repo = m.getRepository(ApiKeyEntity);
      const k = await repo.createQueryBuilder('k').setLock('pessimistic_write').where('k.id = :id', { id }).getOne();
      if (!k || !this.visible(k, scope)) throw new NotFoundError('API key', id);
      if (k.revokedAt)
        throw new ConflictError(`API key ${k.prefix}… (${k.name}) was already revoked at ${k.revokedAt.toISOString()}`);
      await repo.update({ id }, { revokedAt: () => 'now()', revokedBy: scope.user } as never);
      await writeAudit(m, scope, {
        action: 'key.revoked',
        targetType: 'api_key',
        targetId: id,
        details: { name: k.name, prefix: k.prefix },
      });
    });
    // after the commit (a request in between would cache the key again): this process stops accepting
    // it at once, the others when the revocation reaches them (at the latest after ABACUS_AUTH_CACHE_MS)
    this.cache.clear();
    await this.opts.revocations?.publish(id).catch(() => undefined);
    return this.get(id);
  }

  /**
   * The scope of a presented secret, or UnauthenticatedError saying why not (malformed, unknown,
   * revoked, expired). The lookup is by the secret's SHA-256, which reveals nothing about the secret.
   */
  async authenticate(presented: string): Promise<{ scope: RequestScope; key: ApiKeyEntity }> {
    const secret = parseApiKey(presented);
    if (!secret) throw new UnauthenticatedError('malformed API key: expected "abk_" followed by 43 base64url characters');
    const hash = hashApiKey(secret);
    const cached = this.cache.get(hash);
    const fromCache = cached !== undefined && cached.until > Date.now();
    let key: ApiKeyEntity;
    if (fromCache) {
      key = cached.key;
    } else {
      const found = await this.ds.getRepository(ApiKeyEntity).findOneBy({ hash });
      if (!found) throw new UnauthenticatedError(`unknown API key ${displayPrefix(secret)}…`);
      key = found;
    }
    if (key.revokedAt)
      throw new UnauthenticatedError(`API key ${key.prefix}… (${key.name}) was revoked at ${key.revokedAt.toISOString()}`);
    if (key.expiresAt && key.expiresAt.getTime() <= Date.now()) {
      this.cache.delete(hash);
      throw new UnauthenticatedError(`API key ${key.prefix}… (${key.name}) expired at ${key.expiresAt.toISOString()}`);
    }
    if (!fromCache) {
      await this.ds.query(
        `UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '${LAST_USED_RESOLUTION}')`,
        [key.id],
      );
      if (this.opts.cacheMs) {
        if (this.cache.size >= 10_000) this.cache.clear();
        this.cache.set(hash, { key, until: Date.now() + this.opts.cacheMs });
      }
    }
    const scope: RequestScope = {
      user: key.name,
      role: key.role,
      lines: key.lines.includes('*') ? undefined : key.lines,
      keyId: key.id,
    };
    return { scope, key };
  }

  /** Whether a secret is a live key (used by the bootstrap to decide whether a stored key still works). */
  async isLive(secret: string): Promise<boolean> {
    return this.authenticate(secret).then(
      () => true,
      (err: unknown) => {
        if (err instanceof UnauthenticatedError) return false;
        throw err;
      },
    );
  }

  private withoutHash(k: ApiKeyEntity): ApiKeyEntity {
    const { hash: _hash, ...rest } = k;
    return rest as ApiKeyEntity;
  }
}
