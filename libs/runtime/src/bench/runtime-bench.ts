import os from 'node:os';

import { loadNativeAddon } from '../binding';
import { RuntimeModel } from '../runtime-model';
import { ctr26Spec } from './ctr26';
import { makeSyntheticCtr, sliceDataset } from './synthetic-ctr';

export interface RuntimeBenchOptions {
  backend: 'cpu' | 'cuda' | 'tfjs';
  model: 'ctr26';
  batch: number;
  /** timed training steps */
  steps: number;
  threads: number;
  /** rows per slot (100000 = the reference model) */
  vocab: number;
  /** batches of synthetic data, 4/5 train (as the PyTorch peer: NB = 40) */
  batches: number;
  /** rows evaluated for the eval timing (default: the whole test split) */
  evalRows?: number;
  shuffle: boolean;
  /** model seed (default 0) and synthetic-data seed (default 0) */
  seed?: number;
  dataSeed?: number;
  command: string;
}

/** Trains and evaluates ctr26 on synthetic data; returns the figures as one JSON-able object. */
export async function runRuntimeBench(o: RuntimeBenchOptions & { model: 'ctr26' }, log: (s: string) => void = () => {}): Promise<Record<string, unknown>> {
  const t0 = performance.now();
  const { dataset } = makeSyntheticCtr({ rows: o.batch * o.batches, numeric: 13, slots: 26, vocab: o.vocab, maxLen: 4, seed: o.dataSeed ?? 0 });
  const cut = Math.floor((o.batches * 4) / 5) * o.batch;
  const train = sliceDataset(dataset, 0, cut);
  let test = sliceDataset(dataset, cut, dataset.rows);
  if (o.evalRows && o.evalRows < test.rows) test = sliceDataset(test, 0, o.evalRows);
  log(`data: ${dataset.rows} rows (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  const model = RuntimeModel.create({ ...ctr26Spec(o.vocab), seed: o.seed ?? 0 }, { backend: o.backend, threads: o.threads });
  await model.train(train, { epochs: 1, batchSize: o.batch, maxSteps: 3, shuffle: o.shuffle }); // warm-up
  const perEpoch = Math.ceil(train.rows / o.batch);
  const tr = await model.train(train, { epochs: Math.ceil(o.steps / perEpoch), batchSize: o.batch, maxSteps: o.steps, shuffle: o.shuffle, progressEvery: 1000000 });
  log(`train: ${tr.steps} steps, ${Math.round(tr.samplesPerSecond)} samples/s, loss ${tr.finalLoss.toFixed(4)}`);
  await model.predict(sliceDataset(test, 0, Math.min(test.rows, o.batch)), { batchSize: o.batch }); // warm-up
  const te = performance.now();
  await model.predict(test, { batchSize: o.batch });
  const evalSps = test.rows / ((performance.now() - te) / 1000);
  const ev = await model.evaluate(test, { batchSize: o.batch });
  log(`eval: ${Math.round(evalSps)} samples/s, test AUC ${ev.auc.toFixed(4)}`);
  let cpu: Record<string, unknown> = {};
  try {
    cpu = loadNativeAddon().cpuInfo();
  } catch {
    /* tfjs-only run */
  }
  return {
    bench: 'runtime',
    model: 'ctr26',
    backend: model.backend,
    batch: o.batch,
    steps: tr.steps,
    threads: o.threads,
    vocab_per_slot: o.vocab,
    shuffle: o.shuffle,
    seed: o.seed ?? 0,
    data_seed: o.dataSeed ?? 0,
    train_rows: train.rows,
    eval_rows: test.rows,
    train_samples_per_s: Math.round(tr.samplesPerSecond),
    eval_samples_per_s: Math.round(evalSps),
    test_auc: Number(ev.auc.toFixed(4)),
    final_train_loss: Number(tr.finalLoss.toFixed(4)),
    machine: { hostname: os.hostname(), cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, ...cpu },
    date: new Date().toISOString(),
    command: o.command,
  };
}
