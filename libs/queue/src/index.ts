export {
  QueueName,
  JobName,
  JOB_QUEUE,
  JOB_PAYLOAD_SCHEMAS,
  type JobPayloads,
  type TrialJobName,
  isJobName,
  costMeasureJobSchema,
  type CostMeasureJob,
  fitCheckJobSchema,
  type FitCheckJob,
} from './queue-names';
export { JobTimeoutError, QueueService, fitCheckJobId, redisConnection, reportSchedulerId, type PlannedTrialJob } from './queue.service';
export { WorkerHost, type JobHandler, type JobHandlers, type JobContext, MissingHandlerError } from './worker-host';
export { classifyError, isDeviceFaultError, toJobError, TransientError, type Classification, type ErrorClass } from './error-class';
