import type { DataSource } from 'typeorm';
import type { DataDir } from '@abacus/catalog';
import { TrialEntity } from '@abacus/data';
import type { BuiltSamplesCache } from '../model/built-samples.cache';
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
}

/** A finished trial of the same experiment, by its position in the plan. */
export async function trialBySeq(ds: DataSource, experimentId: string, seq: number): Promise<TrialEntity> {
  const t = await ds.getRepository(TrialEntity).findOneBy({ experimentId, seq });
  if (!t) throw new Error(`experiment ${experimentId} has no trial #${seq}`);
  if (t.status !== 'succeeded' || !t.metrics) throw new Error(`trial #${seq} (${t.kind}) has not succeeded`);
  return t;
}
