import type { RequestScope } from '@abacus/core';

/** What the API's middleware attaches to each request. */
export interface RequestContext {
  /** set when the request carried a valid API key */
  scope?: RequestScope;
  /** why the presented credentials were refused (missing, malformed, unknown, revoked, expired) */
  authFailure?: string;
  /** correlates a 500 answer with its server log line */
  requestId?: string;
}

declare module 'express-serve-static-core' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface Request extends RequestContext {}
}
