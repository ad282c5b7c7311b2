import { ApiKeyEntity } from './api-key.entity';
import { AuditLogEntity } from './audit-log.entity';
import { BusinessLineEntity } from './business-line.entity';
import { ExperimentEntity } from './experiment.entity';
import { FeatureResultEntity } from './feature-result.entity';
import { FeatureTableEntity } from './feature-table.entity';
import { FeatureEntity } from './feature.entity';
import { ModelEntity } from './model.entity';
import { SampleSetEntity } from './sample-set.entity';
import { SharedEmbeddingEntity } from './shared-embedding.entity';
import { ServingModelEntity, ServingSwitchEntity, ServingWebhookDeliveryEntity } from './serving.entity';
import { TrialEntity } from './trial.entity';
import { ReportDeliveryEntity, ReportEntity, ReportScheduleEntity } from './report.entity';

export const ENTITIES = [
  BusinessLineEntity,
  FeatureTableEntity,
  FeatureEntity,
  SampleSetEntity,
  ModelEntity,
  ExperimentEntity,
  TrialEntity,
  FeatureResultEntity,
  ApiKeyEntity,
  AuditLogEntity,
  SharedEmbeddingEntity,
  ServingModelEntity,
  ServingSwitchEntity,
  ServingWebhookDeliveryEntity,
  ReportScheduleEntity,
  ReportEntity,
  ReportDeliveryEntity,
];
