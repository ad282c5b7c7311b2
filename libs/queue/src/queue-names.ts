import { z } from 'zod';

/** Every queue Abacus uses. */
export enum QueueName {
  Experiments = 'experiments',
  Trials = 'trials',
}

/** Every job name; the worker refuses to start unless each has a handler. */
export enum JobName {
  /** parent of an experiment's flow: runs once every trial is done, writes the experiment's result */
  FinalizeExperiment = 'experiment.finalize',
  /** WOE/IV (+PSI) scoring of a sample set's features */
  ScoreTrial = 'trial.score',
}

export const JOB_QUEUE: Record<JobName, QueueName> = {
  [JobName.FinalizeExperiment]: QueueName.Experiments,
  [JobName.ScoreTrial]: QueueName.Trials,
};

const experimentJob = z.object({ experimentId: z.string().uuid() });
const trialJob = z.object({ experimentId: z.string().uuid(), trialId: z.string().uuid() });

/** Payload schema per job: the producer builds payloads of these types, the worker re-parses them. */
export const JOB_PAYLOAD_SCHEMAS = {
  [JobName.FinalizeExperiment]: experimentJob,
  [JobName.ScoreTrial]: trialJob,
} satisfies Record<JobName, z.ZodType>;

export type JobPayloads = { [K in JobName]: z.output<(typeof JOB_PAYLOAD_SCHEMAS)[K]> };

export function isJobName(name: string): name is JobName {
  return (Object.values(JobName) as string[]).includes(name);
}
