export { scoreTable, scoreTableAsync } from './iv-scorer';
export {
  scoreFileStreaming,
  DEFAULT_DUCKDB_MEMORY_MB,
  type DuckdbLimits,
  type StreamScoreOptions,
  type StreamedScore,
} from './streaming-iv-scorer';
export { scoreTableOptionsSchema, type ScoreTableOptions } from './score-table-options.schema';
export type { IvReport, FeatureScore, BinScore } from './iv-report.types';
export { computeWoe, WOE_CONVENTION, type WoeResult } from './woe-stats';
export { psi } from './psi';
export { fitNumericBinning } from './numeric-binning';
export { fitCategoricalBinning } from './categorical-binning';
export { fitMultiIdBinning } from './multi-id-binning';
export { encodeLabel } from './label-encoder';
export { ScoringError } from './scoring.error';
export * from './binning.types';
export { ivReportFromFile } from './iv-report.service';
export { formatIvReport } from './iv-report.formatter';
