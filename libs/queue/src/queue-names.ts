import { z } from 'zod';

/** Every queue Abacus uses. */
export enum QueueName {
  Experiments = 'experiments',
  Trials = 'trials',
  /** outgoing webhooks (serving switches), retried with backoff */
  Webhooks = 'webhooks',
  /** auto-pruning reports: schedule fires, report runs, deliveries */
  Reports = 'reports',
  /** compute-cost measurements handed to a worker by the API: any worker listens */
  Costs = 'costs',
  /** the same, for workers with a GPU only: the API prefers it when a GPU worker listens */
  CostsGpu = 'costs-gpu',
  /** a subtract's retraining checks handed to every worker of the same backend (off the GPU) */
  Fits = 'fits',
  /** the same, on workers with a GPU: one prune's checks run on every GPU of every host */
  FitsGpu = 'fits-gpu',
}

/** Every job name; the worker refuses to start unless each has a handler. */
export enum JobName {
  /** parent of an experiment's flow: runs once every trial is done, writes the experiment's result */
  FinalizeExperiment = 'experiment.finalize',
  /** WOE/IV (+PSI) scoring of a sample set's features */
  ScoreTrial = 'trial.score',
  /** build samples, train (or reuse) a model, evaluate it */
  TrainTrial = 'trial.train',
  /** permutation importance of input groups on a trained model */
  AblateTrial = 'trial.ablate',
  /** subtract: rank features, remove them in verified batches */
  PruneTrial = 'trial.prune',
  /** add: paired comparison of base and augmented models, verdicts, provenance, notification */
  CompareTrial = 'trial.compare',
  /** discover: enumerate candidate expressions, screen them against the base model, hand the best to add's comparison */
  DiscoverTrial = 'trial.discover',
  /** multiply: train one model family (target-only, or borrowing sources by one strategy) on every seed */
  MultiplyTrial = 'trial.multiply',
  /** multiply: paired comparison of each strategy × source with the target-only baseline, verdicts */
  MultiplyCompareTrial = 'trial.multiply-compare',
  /** divide: interactions, then per budget tier the MILP and the greedy feature selection */
  DivideSelectTrial = 'trial.divide-select',
  /** divide: retrain one tier's selections on every seed */
  DivideTierTrial = 'trial.divide-tier',
  /** divide: the cost–value frontier; tiers published as model versions */
  DividePublishTrial = 'trial.divide-publish',
  /** serving: one attempt to deliver a switch's signed webhook; BullMQ retries it with backoff */
  ServingWebhook = 'serving.webhook',
  /** reports: one fire of a model's report schedule (made by BullMQ's job scheduler); creates the report row */
  ReportFire = 'report.fire',
  /** reports: runs the subtract in report mode, waits for it, renders the report, queues its deliveries */
  ReportRun = 'report.run',
  /** reports: one attempt to deliver a report (webhook or e-mail); BullMQ retries it with backoff */
  ReportDeliver = 'report.deliver',
  /** costs: one compute-cost measurement (the forward timed with and without inputs) on the worker's backend */
  CostMeasure = 'costs.measure',
  /** the same, taken only by a worker with a GPU (timed on its CUDA backend, device clock) */
  CostMeasureGpu = 'costs.measure-gpu',
  /** subtract: one warm retraining check of a running prune trial (a set switched off, one seed) on a CPU worker */
  FitCheck = 'fit.check',
  /** the same, taken only by a worker with a GPU */
  FitCheckGpu = 'fit.check-gpu',
}

/** Jobs that are trials of an experiment's flow (everything but finalize, webhooks and reports). */
export type TrialJobName = Exclude<
  JobName,
  | JobName.FinalizeExperiment
  | JobName.ServingWebhook
  | JobName.ReportFire
  | JobName.ReportRun
  | JobName.ReportDeliver
  | JobName.CostMeasure
  | JobName.CostMeasureGpu
  | JobName.FitCheck
  | JobName.FitCheckGpu
>;

export const JOB_QUEUE: Record<JobName, QueueName> = {
  [JobName.FinalizeExperiment]: QueueName.Experiments,
  [JobName.ScoreTrial]: QueueName.Trials,
  [JobName.TrainTrial]: QueueName.Trials,
  [JobName.AblateTrial]: QueueName.Trials,
  [JobName.PruneTrial]: QueueName.Trials,
  [JobName.CompareTrial]: QueueName.Trials,
  [JobName.DiscoverTrial]: QueueName.Trials,
  [JobName.MultiplyTrial]: QueueName.Trials,
  [JobName.MultiplyCompareTrial]: QueueName.Trials,
  [JobName.DivideSelectTrial]: QueueName.Trials,
  [JobName.DivideTierTrial]: QueueName.Trials,
  [JobName.DividePublishTrial]: QueueName.Trials,
  [JobName.ServingWebhook]: QueueName.Webhooks,
  [JobName.ReportFire]: QueueName.Reports,
  [JobName.ReportRun]: QueueName.Reports,
  [JobName.ReportDeliver]: QueueName.Reports,
  [JobName.CostMeasure]: QueueName.Costs,
  [JobName.CostMeasureGpu]: QueueName.CostsGpu,
  [JobName.FitCheck]: QueueName.Fits,
  [JobName.FitCheckGpu]: QueueName.FitsGpu,
};

const experimentJob = z.object({ experimentId: z.string().uuid() });
const trialJob = z.object({ experimentId: z.string().uuid(), trialId: z.string().uuid() });
const webhookJob = z.object({ deliveryId: z.string().uuid() });
const reportFireJob = z.object({ scheduleId: z.string().uuid() });
const reportRunJob = z.object({ reportId: z.string().uuid() });
/** A compute-cost measurement: the inputs of the timed model and the measurement's settings (the API's request). */
export const costMeasureJobSchema = z.object({
  /** the API request's id (for the logs) */
  requestId: z.string().min(1).max(100),
  inputs: z
    .array(
      z.object({
        name: z.string().min(1).max(200),
        kind: z.enum(['numeric', 'categorical', 'multi_id']),
        vocab: z.number().int().min(1).optional(),
        listLength: z.number().min(0).optional(),
      }),
    )
    .min(1)
    .max(1000),
  /** rows of the synthetic batch; absent: the worker's backend default */
  rows: z.number().int().min(64).max(65_536).optional(),
  repeats: z.number().int().min(1).max(41),
  architecture: z
    .object({
      embeddingDim: z.number().int().optional(),
      pooling: z.enum(['sum', 'mean']).optional(),
      hidden: z.array(z.number().int()).optional(),
      wide: z.boolean().optional(),
    })
    .optional(),
});

/**
 * One retraining check of a running prune trial: the trained model fine-tuned with `set` switched off
 * on `seed`; the worker that takes it opens the prune's samples and model itself (see prune-fits.ts).
 */
export const fitCheckJobSchema = z.object({
  experimentId: z.string().uuid(),
  /** the prune trial whose check this is */
  trialId: z.string().uuid(),
  /** the inputs switched off (empty: the reference fit) */
  set: z.array(z.string().min(1).max(200)).max(10_000),
  seed: z.number().int().min(0),
});

/** Payload schema per job: the producer builds payloads of these types, the worker re-parses them. */
export const JOB_PAYLOAD_SCHEMAS = {
  [JobName.FinalizeExperiment]: experimentJob,
  [JobName.ScoreTrial]: trialJob,
  [JobName.TrainTrial]: trialJob,
  [JobName.AblateTrial]: trialJob,
  [JobName.PruneTrial]: trialJob,
  [JobName.CompareTrial]: trialJob,
  [JobName.DiscoverTrial]: trialJob,
  [JobName.MultiplyTrial]: trialJob,
  [JobName.MultiplyCompareTrial]: trialJob,
  [JobName.DivideSelectTrial]: trialJob,
  [JobName.DivideTierTrial]: trialJob,
  [JobName.DividePublishTrial]: trialJob,
  [JobName.ServingWebhook]: webhookJob,
  [JobName.ReportFire]: reportFireJob,
  [JobName.ReportRun]: reportRunJob,
  [JobName.ReportDeliver]: webhookJob,
  [JobName.CostMeasure]: costMeasureJobSchema,
  [JobName.CostMeasureGpu]: costMeasureJobSchema,
  [JobName.FitCheck]: fitCheckJobSchema,
  [JobName.FitCheckGpu]: fitCheckJobSchema,
} satisfies Record<JobName, z.ZodType>;

export type CostMeasureJob = z.output<typeof costMeasureJobSchema>;
export type FitCheckJob = z.output<typeof fitCheckJobSchema>;

export type JobPayloads = { [K in JobName]: z.output<(typeof JOB_PAYLOAD_SCHEMAS)[K]> };

export function isJobName(name: string): name is JobName {
  return (Object.values(JobName) as string[]).includes(name);
}
