import type { DataSource } from 'typeorm';
import type { DataDir } from '@abacus/catalog';
import { TrialEntity } from '@abacus/data';
import type { BuiltSamplesCache } from '../model/built-samples.cache';
import type { DevicePool } from '../model/device-pool';
import type { ModelTrainer } from '../model/model-trainer';
import type { WebhookNotifier } from '../notify/webhook-notifier';
import type { TrialLedger } from './trial-ledger';

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
