import type { DataSource } from 'typeorm';
import type { RequestScope } from '@abacus/core';
import type { ExperimentEntity, FeatureResultEntity, TrialEntity } from '@abacus/data';
import type { TrialJobName } from '@abacus/queue';
import type { CreateExperiment } from './experiment.schemas';

export interface PlannedTrial {
  kind: string;
  job: TrialJobName;
  params: Record<string, unknown>;
  /** index of the trial that runs after this one (and may read its results); undefined = finalize */
  parent?: number;
}

export interface ExperimentPlan {
  /** the spec with defaults resolved against stored state (e.g. the feature list) */
  spec: Record<string, unknown>;
  trials: PlannedTrial[];
}

/** What each experiment kind contributes: how to expand a spec into trials and how to sum up the results. */
export interface ExperimentPlanner<K extends CreateExperiment['kind'] = CreateExperiment['kind']> {
  kind: K;
  plan(input: Extract<CreateExperiment, { kind: K }>, ds: DataSource, scope: RequestScope): Promise<ExperimentPlan>;
  summarize(experiment: ExperimentEntity, trials: TrialEntity[], results: FeatureResultEntity[]): Record<string, unknown>;
}
