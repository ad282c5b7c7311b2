export { QueueName, JobName, JOB_QUEUE, JOB_PAYLOAD_SCHEMAS, type JobPayloads, isJobName } from './queue-names';
export { QueueService, redisConnection, type PlannedTrialJob } from './queue.service';
export { WorkerHost, type JobHandler, type JobHandlers, type JobContext, MissingHandlerError } from './worker-host';
export { classifyError, toJobError, TransientError, type Classification, type ErrorClass } from './error-class';
