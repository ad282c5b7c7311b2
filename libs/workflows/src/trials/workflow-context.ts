import type { DataSource } from 'typeorm';
import { SampleSetData, type DataDir, type OpenedSamples } from '@abacus/catalog';
import { SampleSetEntity, TrialEntity } from '@abacus/data';
import type { BuiltSamplesCache } from '../model/built-samples.cache';
import type { DevicePool } from '../model/device-pool';
import type { ModelTrainer } from '../model/model-trainer';
import type { WebhookNotifier } from '../notify/webhook-notifier';
import type { TrialLedger } from './trial-ledger';
import type { FitDispatch, PruneFitStates } from '../subtract/prune-fits';

/** What the model-based trial handlers share in one worker. */
export interface WorkflowContext {
  ds: DataSource;
  ledger: TrialLedger;
  dataDir: DataDir;
  samples: BuiltSamplesCache;
  trainer: ModelTrainer;
  notifier: WebhookNotifier;
  /** the worker's GPUs: a trial that trains or evaluates holds one while it runs */
  devices: DevicePool;
  /** where sample sets are read (uploads, and sets registered by reference through the host's cache); uploads in dataDir when absent */
  data?: SampleSetData;
  /** a prune's retraining checks as fit.check jobs for every worker of the backend (absent: always on this worker) */
  fits?: { dispatch: FitDispatch; states: PruneFitStates };
  /** measures registered features' costs into the ledger (discover measures the expressions it registers) */
  measureCosts?(businessLine: string, features: string[]): Promise<{ measured: number; skipped: { name: string; reason: string }[] }>;
}

/** A sample set's rows on this host (see WorkflowContext.data), by the set's id. */
export async function openSampleSet(w: WorkflowContext, sampleSetId: string): Promise<OpenedSamples> {
  const ss = await w.ds.getRepository(SampleSetEntity).findOneByOrFail({ id: sampleSetId });
  return (w.data ?? new SampleSetData(w.dataDir, null, null)).open(ss);
}

/** Runs fn on a device of the pool (undefined off the GPU), released afterwards. */
export async function withDevice<T>(w: WorkflowContext, fn: (device: number | undefined) => Promise<T>): Promise<T> {
  const device = await w.devices.acquire();
  try {
    return await fn(device);
  } finally {
    w.devices.release(device);
  }
}

/** A finished trial of the same experiment, by its position in the plan. */
export async function trialBySeq(ds: DataSource, experimentId: string, seq: number): Promise<TrialEntity> {
  const t = await ds.getRepository(TrialEntity).findOneBy({ experimentId, seq });
  if (!t) throw new Error(`experiment ${experimentId} has no trial #${seq}`);
  if (t.status !== 'succeeded' || !t.metrics) throw new Error(`trial #${seq} (${t.kind}) has not succeeded`);
  return t;
}
