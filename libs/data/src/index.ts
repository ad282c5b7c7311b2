export { createDataSource, ensureDatabase, dropDatabase } from './data-source';
export { ENTITIES } from './entities';
export { BusinessLineEntity } from './entities/business-line.entity';
export { FeatureTableEntity } from './entities/feature-table.entity';
export {
  FeatureEntity,
  type FeatureKind,
  type FeatureTransform,
  type FeatureCostsRecord,
  type FeatureEntityLevel,
  type CostMeasurement,
  type FeatureProvenance,
  type FeatureExpressionRecord,
} from './entities/feature.entity';
export { SampleSetEntity, type SharingPolicy, type LabelStats, type ReferencedObjectRecord } from './entities/sample-set.entity';
export { SharedEmbeddingEntity, type SharedEmbeddingSlot, type SharedEmbeddingSource } from './entities/shared-embedding.entity';
export { ModelEntity, type ModelCosts } from './entities/model.entity';
export { ExperimentEntity, type ExperimentStatus, TERMINAL_STATUSES } from './entities/experiment.entity';
export { TrialEntity } from './entities/trial.entity';
export { FeatureResultEntity } from './entities/feature-result.entity';
export { type ColumnSchema } from './entities/column-schema';
export { ApiKeyEntity } from './entities/api-key.entity';
export { AuditLogEntity } from './entities/audit-log.entity';
export {
  ServingModelEntity,
  ServingSwitchEntity,
  ServingWebhookDeliveryEntity,
  type WebhookDeliveryStatus,
} from './entities/serving.entity';
export { ReportScheduleEntity, ReportEntity, ReportDeliveryEntity, type ReportStatus } from './entities/report.entity';
