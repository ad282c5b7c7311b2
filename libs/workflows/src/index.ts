export {
  createExperimentSchema,
  experimentListQuerySchema,
  type CreateExperiment,
  type ExperimentListQuery,
} from './experiments/experiment.schemas';
export { type ExperimentPlanner, type ExperimentPlan, type PlannedTrial } from './experiments/experiment-planner';
export { ExperimentService, QueueUnavailableError, type ExperimentDetail } from './experiments/experiment.service';
export { FeatureProvenanceService, type FeatureExperiment } from './experiments/feature-provenance.service';
export { featureVerdict, type FeatureVerdict, type ProvenanceVerdict } from './experiments/feature-provenance';
export { FinalizeExperimentHandler } from './experiments/finalize.handler';
export { TrialLedger } from './trials/trial-ledger';
export { runTrial, setDeviceFaultInjection, TrialCancelledError, type DeviceFaultInjection, type TrialScope, type TrialOutcome } from './trials/trial-runner';
export { ScorePlanner, ivStrength } from './score/score.planner';
export { ScoreTrialHandler } from './score/score-trial.handler';
export { scoreSpecSchema, binningOptionsSchema, type ScoreSpec } from './score/score-experiment.schema';
export { PLANNERS } from './planners';
export { TrainTrialHandler } from './trials/train-trial.handler';
export { AblateTrialHandler } from './trials/ablate-trial.handler';
export { type WorkflowContext } from './trials/workflow-context';
export { PruneTrialHandler, rankFeatures } from './subtract/prune-trial.handler';
export { FitCheckHandler, PruneFitStates, QueueFitDispatch, type FitDispatch, type FitCheckResult } from './subtract/prune-fits';
export { CompareTrialHandler } from './add/compare-trial.handler';
export { MultiplyTrialHandler } from './multiply/multiply-trial.handler';
export { MultiplyCompareHandler } from './multiply/multiply-compare.handler';
export { DivideSelectHandler, DivideTierHandler, DividePublishHandler } from './divide/divide.handlers';
export { divideSpecSchema } from './divide/divide-experiment.schema';
export { multiplySpecSchema, multiplyVerdict, labelRateFlag, MULTIPLY_RULE } from './multiply/multiply-experiment.schema';
export { verdictFor, type Verdict } from './add/verdict';
export { BuiltSamplesCache } from './model/built-samples.cache';
export { ModelTrainer } from './model/model-trainer';
export { WebhookNotifier, type Delivery } from './notify/webhook-notifier';
export { pairedBootstrap, pairedSeedBootstrap } from './stats/paired-bootstrap';
export { foldInterval } from './stats/fold-interval';
export { addSpecSchema } from './add/add-experiment.schema';
export { subtractSpecSchema } from './subtract/subtract-experiment.schema';
export { selectBackend, type BackendSelection } from './model/backend-selection';
export { DevicePool } from './model/device-pool';
export { ExperimentReaper, type ReaperOptions, type ReapReport } from './experiments/experiment-reaper';
export {
  CostLedgerService,
  type CostLedger,
  type CostLedgerOptions,
  type CostMeasurementReport,
} from './divide/cost-ledger.service';
export {
  costLedgerQuerySchema,
  measureCostsSchema,
  MAX_MEASURED_FEATURES,
  type CostLedgerQuery,
  type MeasureCosts,
} from './divide/cost-ledger.schemas';
export { measureCompute, syntheticBatch, type ComputeInput, type ComputeMeasurement } from './divide/cost-meter';
export { CostMeasureHandler, runComputeMeasurement, type ComputeRun, type MeasuredWhere } from './divide/cost-compute';
export { measureStorage, type ColumnToMeasure, type StorageMeasurement } from './divide/storage-meter';
export {
  COST_RESOURCES,
  COST_UNITS,
  DEFAULT_CANDIDATES_PER_REQUEST,
  bestOf,
  bytesPerValue,
  computeShare,
  entityLevel,
  fanOut,
  ledgerEntry,
  ledgerFigure,
  measuredCommunication,
  type ColumnStats,
  type CostResource,
  type LedgerEntry,
  type LedgerFigure,
} from './divide/cost-rules';
export { DiscoverTrialHandler } from './discover/discover-trial.handler';
export { discoverSpecSchema, DISCOVER_FAMILIES, type DiscoverSpec } from './discover/discover-experiment.schema';
