import { Injectable } from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';
import type { RequestScope } from '@abacus/core';

/** Per-key rate limit (ABACUS_RATE_LIMIT_PER_MIN); requests without a valid key count against their IP. */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    const scope = req.scope as RequestScope | undefined;
    return scope?.keyId ? `key:${scope.keyId}` : `ip:${String(req.ip)}`;
  }
}
