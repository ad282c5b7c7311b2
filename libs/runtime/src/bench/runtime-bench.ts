import os from 'node:os';

import { loadCudaAddon, loadNativeAddon } from '../binding';
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
  /** also time shuffle ablation of all 26 slots x 3 repeats against 78 evaluation passes */
  ablation?: boolean;
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
  // warm-up (cuda: also makes the test set resident on the GPU, as the training set is)
  await model.predict(model.backend === 'cuda' ? test : sliceDataset(test, 0, Math.min(test.rows, o.batch)), { batchSize: o.batch });
  const evalReps = model.backend === 'cuda' ? 5 : 1;
  const te = performance.now();
  for (let i = 0; i < evalReps; i++) await model.predict(test, { batchSize: o.batch });
  const evalSps = (evalReps * test.rows) / ((performance.now() - te) / 1000);
  const ev = await model.evaluate(test, { batchSize: o.batch });
  log(`eval: ${Math.round(evalSps)} samples/s, test AUC ${ev.auc.toFixed(4)}`);
  // AUC on the PyTorch peer's schedule (EPOCHS=2 over the same 4/5 train split), fresh model
  const fresh = RuntimeModel.create({ ...ctr26Spec(o.vocab), seed: o.seed ?? 0 }, { backend: o.backend, threads: o.threads });
  await fresh.train(train, { epochs: 2, batchSize: o.batch, shuffle: o.shuffle });
  const ev2 = await fresh.evaluate(test, { batchSize: o.batch });
  log(`test AUC after 2 epochs (the peer's schedule): ${ev2.auc.toFixed(4)}`);
  let ablation: Record<string, unknown> | undefined;
  if (o.ablation) {
    const groups = Array.from({ length: 26 }, (_, s) => [`slot${s}`]);
    const ta = performance.now();
    const ab = await model.ablate(test, { groups, repeats: 3, seed: 1, batchSize: o.batch });
    const ablSec = (performance.now() - ta) / 1000;
    const tp = performance.now();
    for (let i = 0; i < 78; i++) await model.predict(test, { batchSize: o.batch });
    const passSec = (performance.now() - tp) / 1000;
    ablation = { groups: 26, repeats: 3, seconds: Number(ablSec.toFixed(4)), seconds_78_eval_passes: Number(passSec.toFixed(4)), ratio: Number((ablSec / passSec).toFixed(3)), base_auc: ab.base.auc, slot1_auc_change: ab.groups[1]?.auc.mean };
    log(`ablation 26 slots x 3: ${ablSec.toFixed(3)} s vs 78 eval passes ${passSec.toFixed(3)} s (ratio ${(ablSec / passSec).toFixed(3)})`);
  }
  let gpu: Record<string, unknown> | undefined;
  if (model.backend === 'cuda') gpu = { ...loadCudaAddon()?.cudaInfo(), math: process.env.ABACUS_CUDA_MATH ?? 'tf32' };
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
    test_auc: Number(ev2.auc.toFixed(4)),
    test_auc_epochs: 2,
    test_auc_after_timed_run: Number(ev.auc.toFixed(4)),
    final_train_loss: Number(tr.finalLoss.toFixed(4)),
    ...(ablation ? { ablation } : {}),
    ...(gpu ? { gpu } : {}),
    machine: { hostname: os.hostname(), cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, ...cpu },
    date: new Date().toISOString(),
    command: o.command,
  };
}
