import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { scopeFromHeaders, type RequestScope } from '@abacus/core';

/** The caller and the business lines they may see (see RequestScope). */
export const Scope = createParamDecorator((_: unknown, ctx: ExecutionContext): RequestScope => {
  const req = ctx.switchToHttp().getRequest<Request>();
  return scopeFromHeaders(req.headers);
});
