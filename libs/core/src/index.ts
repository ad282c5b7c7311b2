export { ZodValidationPipe, uuidParam, uuidSchema } from './zod-validation.pipe';
export { formatZodIssues, describeZodError, type ValidationIssue } from './zod-issues';
export { type RequestScope, ANONYMOUS_SCOPE, scopeFromHeaders, canSeeLine } from './request-scope';
export { paginationSchema, type Pagination, type Page } from './pagination.schema';
export { NotFoundError, ConflictError, InvalidInputError } from './domain-errors';
