export * from './catalog.schemas';
export { DataDir, PathEscapeError, type SharedStore, type PulledDir } from './data-dir';
export { openDataDir, type DataDirConfig } from './open-data-dir';
export { TableInspector, columnKind, scrub, type InspectedTable, type ImportLimits } from './table-inspector';
export { BusinessLineService } from './business-line.service';
export { SampleSetService, sharedWith, canReadSampleSet, type UploadedFile, type ImportWarnings } from './sample-set.service';
export { FeatureService } from './feature.service';
export { ModelService } from './model.service';
export {
  EmbeddingService,
  parseEmbeddingRef,
  embeddingSharedWith,
  embeddingUpdatableBy,
  EMBEDDING_NAME,
  type RegisterEmbedding,
} from './embedding.service';
export { SampleSetData, type OpenedSamples } from './sample-set-data';
export {
  inspectReference,
  readParquetFooter,
  columnsOf,
  duckdbTypeOf,
  type InspectedReference,
  type PartitionRange,
} from './reference-inspector';
export {
  checkFeatureExpression,
  columnClasses,
  exprContext,
  expressionRecord,
  refTargets,
  registeredFeature,
  expressionSource,
  tableJoin,
  type RegistryRefTarget,
} from './feature-expression';
