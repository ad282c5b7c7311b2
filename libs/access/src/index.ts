export {
  KEY_PREFIX,
  generateApiKey,
  hashApiKey,
  parseApiKey,
  bearerToken,
  displayPrefix,
  type NewApiKeySecret,
} from './api-key-secret';
export * from './access.schemas';
export { ApiKeyService, type CreatedApiKey } from './api-key.service';
export { AuditService } from './audit.service';
export { writeAudit, type AuditEntry } from './audit-writer';
export { KeyRevocationBus } from './key-revocation-bus';
