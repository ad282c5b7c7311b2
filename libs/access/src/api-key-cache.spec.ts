import { describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import type { ApiKeyEntity } from '@abacus/data';
import { generateApiKey } from './api-key-secret';
import { ApiKeyService } from './api-key.service';

/** A DataSource that answers the key lookup from memory and counts the round trips. */
function fakeDs(key: Partial<ApiKeyEntity>) {
  const calls = { find: 0, query: 0 };
  const ds = {
    getRepository: () => ({
      findOneBy: async () => {
        calls.find++;
        return key;
      },
    }),
    query: async () => {
      calls.query++;
      return [];
    },
  } as unknown as DataSource;
  return { ds, calls };
}

const live: Partial<ApiKeyEntity> = {
  id: 'k1',
  name: 'k',
  prefix: 'abk_x',
  role: 'viewer',
  lines: ['feed'],
  revokedAt: null,
  expiresAt: null,
};

describe('ApiKeyService authentication cache', () => {
  it('is off by default: every request reads Postgres', async () => {
    const { ds, calls } = fakeDs({ ...live });
    const svc = new ApiKeyService(ds);
    const { secret } = generateApiKey();
    await svc.authenticate(secret);
    await svc.authenticate(secret);
    expect(calls.find).toBe(2);
  });

  it('with cacheMs, a checked key is trusted without Postgres until it expires', async () => {
    const key: Partial<ApiKeyEntity> = { ...live };
    const { ds, calls } = fakeDs(key);
    const svc = new ApiKeyService(ds, { cacheMs: 60_000 });
    const { secret } = generateApiKey();
    for (let i = 0; i < 5; i++) expect((await svc.authenticate(secret)).scope.user).toBe('k');
    expect(calls).toEqual({ find: 1, query: 1 });
    // expiry is checked on the cached key too
    key.expiresAt = new Date(Date.now() - 1000);
    await expect(svc.authenticate(secret)).rejects.toThrow(/expired at/);
  });
});
