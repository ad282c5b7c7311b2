import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ConflictError, ForbiddenError, InvalidInputError, NotFoundError, UnauthenticatedError } from '@abacus/core';
import { QueueUnavailableError } from '@abacus/workflows';
import './request-context';

/** What body-parser throws (http-errors): a `type` naming the failure and the status it suggests. */
interface BodyParserError {
  type: string;
  status: number;
  expose?: boolean;
  limit?: number;
}

export function isBodyParserError(err: unknown): err is BodyParserError {
  const e = err as Partial<BodyParserError> | null;
  return !!e && typeof e.type === 'string' && typeof e.status === 'number' && e.status >= 400 && e.status < 500;
}

/**
 * Maps errors to HTTP: invalid input 400 (with the field path), no valid key 401, role or line
 * forbids 403, missing 404, conflict 409, queue down 503; request bodies the parser refuses keep their
 * 4xx (too large 413, malformed JSON 400). Anything else is a 500 whose body says only
 * "internal error" and the request id; the stack goes to the server log under that id.
 */
@Catch()
export class DomainExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  constructor(private readonly limits: { jsonLimitKb?: number; uploadLimitMb?: number } = {}) {}

  catch(err: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const req = host.switchToHttp().getRequest<Request>();
    if (isBodyParserError(err)) {
      sendBodyError(err, res, this.limits.jsonLimitKb);
      return;
    }
    if (err instanceof HttpException) {
      if (err.getStatus() === 413 && this.limits.uploadLimitMb) {
        // multer's "File too large", with the limit and where it is set
        const message = `uploaded file is larger than the limit of ${this.limits.uploadLimitMb} MB (ABACUS_UPLOAD_LIMIT_MB)`;
        res
          .status(413)
          .json({ statusCode: 413, error: 'Payload Too Large', message, issues: [{ path: 'file', message, code: 'too_big' }] });
        return;
      }
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

/** The answer to a body the parser refused: its 4xx with a message that names the limit or the problem. */
export function sendBodyError(err: BodyParserError, res: Response, jsonLimitKb?: number): void {
  const limitKb = jsonLimitKb ?? (err.limit ? Math.round(err.limit / 1024) : undefined);
  const [status, message] =
    err.type === 'entity.too.large'
      ? [413, `request body is larger than the limit of ${limitKb} KB (ABACUS_JSON_LIMIT_KB)`]
      : err.type === 'entity.parse.failed'
        ? [400, 'request body is not valid JSON']
        : err.type === 'parameters.too.many'
          ? [413, 'request body has too many parameters']
          : err.type === 'encoding.unsupported' || err.type === 'charset.unsupported'
            ? [415, 'unsupported request body encoding or charset']
            : [err.status, 'request body could not be read'];
  const error = status === 413 ? 'Payload Too Large' : status === 415 ? 'Unsupported Media Type' : 'Bad Request';
  res.status(status).json({
    statusCode: status,
    error,
    message,
    issues: [{ path: '(body)', message, code: err.type }],
  });
}
