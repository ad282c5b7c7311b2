/** Errors domain code throws; the API maps them to HTTP status codes in one filter. */
export class NotFoundError extends Error {
  constructor(
    readonly entity: string,
    readonly id: string,
  ) {
    super(`${entity} ${id} not found`);
  }
}

export class ConflictError extends Error {}

/** Input that passed the schema but is wrong against stored state (e.g. a label column the file lacks). */
export class InvalidInputError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

/** The caller is known but its role or business lines do not allow the action (HTTP 403). */
export class ForbiddenError extends Error {}

/** No valid credentials: missing, malformed, unknown, revoked or expired API key (HTTP 401). */
export class UnauthenticatedError extends Error {}
