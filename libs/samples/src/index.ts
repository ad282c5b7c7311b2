export * from './simulator/world.types';
export * from './simulator/sim-world.types';
export { simulateWorld } from './simulator/simulator.service';
export { simulateOptionsSchema, type SimulateOptions } from './simulator/simulate-options.schema';
export { FEATURE_CATALOG, DOMAIN_NAMES, type FeatureSpec } from './simulator/feature-catalog';
export { Prng } from './simulator/prng';
export { UNRELATED_DOMAIN } from './simulator/world-constants';
export { exactAuc } from './metrics/exact-auc';
export { writeWorld, type WorldManifest, type ManifestFile } from './simulator/world-writer';
export { readTable, describeTable, kindOfDuckdbType, tableSource, type TableSource } from './io/table-reader';
export { planTableRead, asTableReadError, type ColumnRead } from './io/table-reader';
export { quoteIdent, quoteLiteral, loadColumns, type LoadColumn } from './io/column-loader';
export { TableReadError } from './io/table-read.error';
export { readCsvHeader, readParquetColumnNames, topLevelNames, firstDuplicateName } from './io/raw-columns';
export { readTableOptionsSchema, type ReadTableOptions } from './io/read-table-options.schema';
export type * from './io/table.types';
export { flatToTable } from './io/flat-to-table';
export { runSim, formatSimSummary, type SimSummary } from './simulator/sim-runner';
export * from './calibration/calibration-world';
// sample building: labelled samples + feature definitions -> encoded train/test datasets for the runtime
export type * from './build/sample-build.types';
export {
  buildSamples,
  sampleBuildKey,
  estimateBuildBytes,
  prepareBuild,
  openPlan,
  encodeRange,
  describeBuild,
  concatSplits,
  DEFAULT_RANGE_ROWS,
  type BuildPlan,
  type EncodedRange,
  type PlannedColumn,
} from './build/sample-builder';
export {
  encodeRanges,
  buildThreadScript,
  buildThreadPool,
  BuildThreadPool,
  type EncodeRangesOptions,
} from './build/range-threads';
export {
  sampleBuildRequestSchema,
  featureDefSchema,
  featureSourceSchema,
  featureTransformSchema,
} from './build/sample-build-request.schema';
export { SampleBuildError } from './build/sample-build.error';
export { fnv1a32, hashBucket } from './build/feature-hash';
export type { SlotIdSpace } from './build/feature-encoders';
export {
  writeSampleUnion,
  validationRowCount,
  UNION_LABEL,
  UNION_TIME,
  UNION_DOMAIN,
  type UnionPart,
  type SampleUnionRequest,
  type SampleUnionResult,
} from './build/sample-union';
// feature expressions: typed trees over a set's columns and its earlier rows, compiled to the builder's SQL
export * from './expr';
