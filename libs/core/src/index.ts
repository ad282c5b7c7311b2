export { ZodValidationPipe, uuidParam, uuidSchema } from './zod-validation.pipe';
export { formatZodIssues, describeZodError, type ValidationIssue } from './zod-issues';
export {
  type RequestScope,
  type Role,
  ROLES,
  SYSTEM_SCOPE,
  canSeeLine,
  hasRole,
  requireRole,
  requireLine,
  requireWrite,
} from './request-scope';
export { lineName } from './line-name';
export { paginationSchema, type Pagination, type Page } from './pagination.schema';
export { NotFoundError, ConflictError, InvalidInputError, ForbiddenError, UnauthenticatedError } from './domain-errors';
export { PeriodicPass } from './periodic-pass';
export { LARGE_TIER, tierAlias, tierFromAlias } from './tier-alias';
