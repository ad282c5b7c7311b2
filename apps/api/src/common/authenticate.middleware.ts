import { randomUUID } from 'node:crypto';
import { Inject, Injectable, type NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { ApiKeyService, bearerToken } from '@abacus/access';
import { UnauthenticatedError } from '@abacus/core';
import './request-context';

/**
 * Gives every request an id and, when it carries `Authorization: Bearer <key>`, the key's scope.
 * It never refuses a request itself: the rate limiter and the access guard run after it and decide
 * (so failed attempts are rate limited by IP, and public routes ignore bad keys).
 */
@Injectable()
export class AuthenticateMiddleware implements NestMiddleware {
  constructor(@Inject(ApiKeyService) private readonly keys: ApiKeyService) {}

  async use(req: Request, res: Response, next: NextFunction): Promise<void> {
    req.requestId = randomUUID();
    res.setHeader('x-request-id', req.requestId);
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) {
      req.authFailure = 'missing API key: send "Authorization: Bearer <key>"';
    } else if (token === null) {
      req.authFailure = 'malformed Authorization header: expected "Bearer <key>"';
    } else {
      try {
        req.scope = (await this.keys.authenticate(token)).scope;
      } catch (err) {
        if (!(err instanceof UnauthenticatedError)) return next(err);
        req.authFailure = err.message;
      }
    }
    next();
  }
}
