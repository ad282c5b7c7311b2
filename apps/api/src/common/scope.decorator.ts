import { createParamDecorator, InternalServerErrorException, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { RequestScope } from '@abacus/core';
import './request-context';

/** The caller's scope, filled from their API key by AuthenticateMiddleware and checked by AccessGuard. */
export const Scope = createParamDecorator((_: unknown, ctx: ExecutionContext): RequestScope => {
  const req = ctx.switchToHttp().getRequest<Request>();
  // only reachable on a public route that asks for a scope: a bug, never an anonymous caller
  if (!req.scope) throw new InternalServerErrorException('no request scope on this route');
  return req.scope;
});
