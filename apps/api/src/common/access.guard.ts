import {
  ForbiddenException,
  Injectable,
  Logger,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { hasRole } from '@abacus/core';
import { ACCESS_METADATA, type AccessLevel } from './access.decorator';
import './request-context';

const HOW_TO_GET_A_KEY =
  'create one with `abacus keys create` (admin) or `abacus keys bootstrap` on a fresh install, then `abacus login --key <key>`';

/** 401 without a valid key, 403 when the key's role is below the route's; line checks happen in the services. */
@Injectable()
export class AccessGuard implements CanActivate {
  private readonly logger = new Logger('access');

  constructor(private readonly reflector: Reflector) {}

  canActivate(ctx: ExecutionContext): boolean {
    const level = this.reflector.getAllAndOverride<AccessLevel | undefined>(ACCESS_METADATA, [ctx.getHandler(), ctx.getClass()]);
    const req = ctx.switchToHttp().getRequest<Request>();
    if (level === 'public') return true;
    if (!level) {
      // fail closed: a route without a declared access level is a programming error, not an open door
      this.logger.error(`${req.method} ${req.path} declares no access level (@Access)`);
      throw new ForbiddenException({ statusCode: 403, error: 'Forbidden', message: 'this route declares no access level' });
    }
    if (!req.scope) {
      throw new UnauthorizedException({
        statusCode: 401,
        error: 'Unauthorized',
        message: `${req.authFailure ?? 'missing API key'} (${HOW_TO_GET_A_KEY})`,
      });
    }
    if (!hasRole(req.scope, level)) {
      throw new ForbiddenException({
        statusCode: 403,
        error: 'Forbidden',
        message: `role ${req.scope.role} may not ${req.method} ${req.path} (needs ${level} or above)`,
      });
    }
    return true;
  }
}
