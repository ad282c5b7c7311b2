import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ConflictError, ForbiddenError, InvalidInputError, NotFoundError, UnauthenticatedError } from '@abacus/core';
import { QueueUnavailableError } from '@abacus/workflows';
import './request-context';

/**
 * Maps domain errors to HTTP: invalid input 400 (with the field path), no valid key 401, role or line
 * forbids 403, missing 404, conflict 409, queue down 503. Anything else is a 500 whose body says only
 * "internal error" and the request id; the stack goes to the server log under that id.
 */
@Catch()
export class DomainExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(err: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const req = host.switchToHttp().getRequest<Request>();
    if (err instanceof HttpException) {
      const body = err.getResponse();
      res.status(err.getStatus()).json(typeof body === 'string' ? { statusCode: err.getStatus(), message: body } : body);
      return;
    }
    if (err instanceof InvalidInputError) {
      res.status(400).json({
        statusCode: 400,
        error: 'Bad Request',
        message: 'Validation failed',
        issues: [{ path: err.path, message: err.message.slice(err.path.length + 2), code: 'invalid_input' }],
      });
      return;
    }
    if (err instanceof UnauthenticatedError) {
      res.status(401).json({ statusCode: 401, error: 'Unauthorized', message: err.message });
      return;
    }
    if (err instanceof ForbiddenError) {
      res.status(403).json({ statusCode: 403, error: 'Forbidden', message: err.message });
      return;
    }
    if (err instanceof NotFoundError) {
      res.status(404).json({ statusCode: 404, error: 'Not Found', message: err.message });
      return;
    }
    if (err instanceof ConflictError) {
      res.status(409).json({ statusCode: 409, error: 'Conflict', message: err.message });
      return;
    }
    if (err instanceof QueueUnavailableError) {
      res.status(503).json({ statusCode: 503, error: 'Service Unavailable', message: err.message });
      return;
    }
    const requestId = req.requestId ?? 'none';
    this.logger.error(
      `request ${requestId} ${req.method} ${req.originalUrl}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    );
    res.status(500).json({ statusCode: 500, error: 'Internal Server Error', message: 'internal error', requestId });
  }
}
