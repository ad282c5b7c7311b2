import { mkdtempSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import path from 'node:path';

import { loadCudaAddon, loadNativeAddon } from '../binding';
import { RuntimeModel } from '../runtime-model';
import { ctr26Spec } from './ctr26';
import type { ColumnarDataset, RuntimeData } from '../dataset.types';
import { openShards, writeShard } from '../shard-format';
import { readPeerData, type PeerDataMeta } from './peer-data';
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
  /** the PyTorch peer's own data set, written by libs/runtime/bench/peer_data.py (default: our generator) */
  dataDir?: string;
  /** cuda: CUPTI trace of 10 training steps and of one predict (launch counts, per-kernel times) */
  trace?: boolean;
  /** model seeds whose test AUC on the peer's schedule is also reported (mean and each) */
  aucSeeds?: number[];
  /**
   * train from shard files (written first, one per 8 batches, then mapped and read natively, pages
   * released behind) instead of from arrays in memory: the streaming path of built sample sets
   */
  stream?: boolean;
}

/** Multiply-adds x 2 of the MLP per sample (13 + 26 x 16 = 429 inputs, 512, 256, 1). */
const MLP_FLOPS_PER_SAMPLE = 2 * (429 * 512 + 512 * 256 + 256);

/** Trains and evaluates ctr26 on synthetic data; returns the figures as one JSON-able object. */
export async function runRuntimeBench(o: RuntimeBenchOptions & { model: 'ctr26' }, log: (s: string) => void = () => {}): Promise<Record<string, unknown>> {
  const t0 = performance.now();
  let dataset: ColumnarDataset;
  let cut = Math.floor((o.batches * 4) / 5) * o.batch;
  let peer: PeerDataMeta | undefined;
  if (o.dataDir) {
    const r = readPeerData(o.dataDir);
    if (r.meta.batch !== o.batch || r.meta.vocab !== o.vocab)
      throw new Error(`--data ${o.dataDir} was written for batch ${r.meta.batch}, vocab ${r.meta.vocab}; the bench runs batch ${o.batch}, vocab ${o.vocab}`);
    dataset = r.dataset;
    peer = r.meta;
    cut = r.meta.train_rows;
  } else {
    dataset = makeSyntheticCtr({ rows: o.batch * o.batches, numeric: 13, slots: 26, vocab: o.vocab, maxLen: 4, seed: o.dataSeed ?? 0 }).dataset;
  }
  const trainRows = sliceDataset(dataset, 0, cut);
  let test = sliceDataset(dataset, cut, dataset.rows);
  if (o.evalRows && o.evalRows < test.rows) test = sliceDataset(test, 0, o.evalRows);
  log(`data: ${dataset.rows} rows (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  let streamDir: string | null = null;
  let train: RuntimeData = trainRows;
  if (o.stream) {
    streamDir = mkdtempSync(path.join(tmpdir(), 'abacus-stream-bench-'));
    const files: string[] = [];
    for (let at = 0; at < trainRows.rows; at += 8 * o.batch) {
      const f = path.join(streamDir, `${String(files.length).padStart(4, '0')}.shard`);
      await writeShard(f, sliceDataset(trainRows, at, Math.min(trainRows.rows, at + 8 * o.batch)));
      files.push(f);
    }
    train = await openShards(files);
    log(`stream: training from ${files.length} shard files`);
  }
  const model = RuntimeModel.create({ ...ctr26Spec(o.vocab), seed: o.seed ?? 0 }, { backend: o.backend, threads: o.threads });
  await model.train(train, { epochs: 1, batchSize: o.batch, maxSteps: 3, shuffle: o.shuffle }); // warm-up
  const perEpoch = Math.ceil(train.rows / o.batch);
  const tr = await model.train(train, { epochs: Math.ceil(o.steps / perEpoch), batchSize: o.batch, maxSteps: o.steps, shuffle: o.shuffle, progressEvery: 1000000 });
  log(`train: ${tr.steps} steps, ${Math.round(tr.samplesPerSecond)} samples/s, loss ${tr.finalLoss.toFixed(4)}`);
  // warm-up (cuda: also makes the test set resident on the GPU, as the training set is)
  await model.predict(model.backend === 'cuda' ? test : sliceDataset(test, 0, Math.min(test.rows, o.batch)), { batchSize: o.batch });
  // cuda: 30 timed calls (one call is ~1 ms; a handful is dominated by the first calls' jitter)
  const evalReps = model.backend === 'cuda' ? 30 : 1;
  const evalCallMs: number[] = [];
  const te = performance.now();
  for (let i = 0; i < evalReps; i++) {
    const tc = performance.now();
    await model.predict(test, { batchSize: o.batch });
    evalCallMs.push(Number((performance.now() - tc).toFixed(3)));
  }
  const evalSps = (evalReps * test.rows) / ((performance.now() - te) / 1000);
  // the same calls' median (a few slow calls move the mean; the median is the usual summary)
  const evalSpsMedian = test.rows / ([...evalCallMs].sort((a, b) => a - b)[evalCallMs.length >> 1]! / 1000);
  const ev = await model.evaluate(test, { batchSize: o.batch });
  log(`eval: ${Math.round(evalSps)} samples/s (mean of ${evalReps} calls; median call ${Math.round(evalSpsMedian)}), test AUC after the timed run ${ev.auc.toFixed(4)}`);
  // AUC on the PyTorch peer's schedule, fresh model: 3 warm-up steps on the first batches, 2 epochs
  // over the same 4/5 train split in order, and on cuda the one step the peer's profiler runs
  const peerScheduleAuc = async (seed: number) => {
    const fresh = RuntimeModel.create({ ...ctr26Spec(o.vocab), seed }, { backend: o.backend, threads: o.threads });
    await fresh.train(train, { epochs: 1, batchSize: o.batch, maxSteps: 3, shuffle: o.shuffle });
    await fresh.train(train, { epochs: 2, batchSize: o.batch, shuffle: o.shuffle });
    if (fresh.backend === 'cuda') await fresh.train(train, { epochs: 1, batchSize: o.batch, maxSteps: 1, shuffle: o.shuffle });
    return (await fresh.evaluate(test, { batchSize: o.batch })).auc;
  };
  const auc2 = await peerScheduleAuc(o.seed ?? 0);
  log(`test AUC on the peer's schedule (3 warm-up steps + 2 epochs${model.backend === 'cuda' ? ' + 1' : ''}): ${auc2.toFixed(4)}`);
  let seedsAuc: { seeds: number[]; auc: number[]; mean: number } | undefined;
  if (o.aucSeeds?.length) {
    const auc: number[] = [];
    for (const sd of o.aucSeeds) auc.push(Number((await peerScheduleAuc(sd)).toFixed(5)));
    seedsAuc = { seeds: o.aucSeeds, auc, mean: Number((auc.reduce((a, b) => a + b, 0) / auc.length).toFixed(5)) };
    log(`test AUC over model seeds ${o.aucSeeds.join(',')}: ${auc.join(' ')} (mean ${seedsAuc.mean})`);
  }
  let trace: Record<string, unknown> | undefined;
  const addon = model.backend === 'cuda' ? loadCudaAddon() : null;
  if (o.trace && addon) {
    // the regions run even when CUPTI is unavailable (under ncu the profiler holds CUPTI)
    const steps = Math.min(10, Math.floor(train.rows / o.batch));
    // once untraced: a predict with more rows grows the step buffers, so the graph is captured again
    await model.train(train, { epochs: 1, batchSize: o.batch, maxSteps: steps, shuffle: o.shuffle });
    const why = addon.traceStart();
    await model.train(train, { epochs: 1, batchSize: o.batch, maxSteps: steps, shuffle: o.shuffle });
    const tTrain = JSON.parse(addon.traceStop(steps)) as Record<string, unknown>;
    addon.traceStart();
    await model.predict(test, { batchSize: o.batch });
    const tEval = JSON.parse(addon.traceStop(1)) as Record<string, unknown>;
    if (why) {
      trace = { error: why };
      log(`CUPTI trace unavailable: ${why}`);
    } else {
      trace = { train_steps: tTrain, predict: { rows: test.rows, ...tEval } };
      log(`CUPTI, ${steps} training steps: ${String(tTrain.graph_launch_calls)} graph launches, ${String(tTrain.kernel_launch_calls)} kernel launches, ${String(tTrain.kernels_executed)} kernels executed`);
      for (const k of (tTrain.kernels as { name: string; count: number; ns_per_region: number }[]).slice(0, 30))
        log(`  train ${(k.ns_per_region / 1000).toFixed(1).padStart(8)} us/step  x${k.count / steps}  ${k.name}`);
      log(`CUPTI, one predict of ${test.rows} rows: ${String(tEval.kernel_launch_calls)} kernel launches, ${String(tEval.kernels_executed)} kernels, span ${(Number(tEval.span_ns) / 1e3).toFixed(1)} us`);
      for (const k of (tEval.kernels as { name: string; count: number; ns_per_region: number }[]).slice(0, 20))
        log(`  eval ${(k.ns_per_region / 1000).toFixed(1).padStart(8)} us  x${k.count}  ${k.name}`);
    }
  }
  let ablation: Record<string, unknown> | undefined;
  if (o.ablation) {
    const groups = Array.from({ length: 26 }, (_, s) => [`slot${s}`]);
    // warm both sides alike: one untimed ablation (first-call buffer allocations), as the eval
    // passes below follow the warm-up predicts above
    await model.ablate(test, { groups, repeats: 3, seed: 2, batchSize: o.batch });
    // three timed ablations and three timed sets of 78 passes, alternating; the ratio of the medians
    const ablRuns: number[] = [], passRuns: number[] = [];
    let ab: Awaited<ReturnType<typeof model.ablate>> | undefined;
    for (let rep = 0; rep < 3; rep++) {
      const ta = performance.now();
      ab = await model.ablate(test, { groups, repeats: 3, seed: 1, batchSize: o.batch });
      ablRuns.push((performance.now() - ta) / 1000);
      const tp = performance.now();
      for (let i = 0; i < 78; i++) await model.predict(test, { batchSize: o.batch });
      passRuns.push((performance.now() - tp) / 1000);
    }
    const med = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
    const ablSec = med(ablRuns), passSec = med(passRuns);
    // traced separately (CUPTI costs time): where an ablation's time goes
    if (o.trace && addon && !addon.traceStart()) {
      await model.ablate(test, { groups, repeats: 3, seed: 3, batchSize: o.batch });
      const tAbl = JSON.parse(addon.traceStop(1)) as Record<string, unknown>;
      if (trace) trace.ablate = tAbl;
      log(`CUPTI, one ablation (78 configurations): ${String(tAbl.kernels_executed)} kernels, kernel time ${(Number(tAbl.kernel_time_ns) / 1e6).toFixed(2)} ms, span ${(Number(tAbl.span_ns) / 1e6).toFixed(2)} ms, memcpy ${String(tAbl.memcpys)} (${(Number(tAbl.memcpy_bytes) / 1e6).toFixed(1)} MB)`);
      for (const k of (tAbl.kernels as { name: string; count: number; ns_per_region: number }[]).slice(0, 12))
        log(`  ablate ${(k.ns_per_region / 1e6).toFixed(2).padStart(7)} ms  x${k.count}  ${k.name}`);
    }
    ablation = {
      groups: 26,
      repeats: 3,
      seconds: Number(ablSec.toFixed(4)),
      seconds_78_eval_passes: Number(passSec.toFixed(4)),
      ratio: Number((ablSec / passSec).toFixed(3)),
      runs: ablRuns.map((a, i) => ({ ablation_s: Number(a.toFixed(4)), passes_78_s: Number(passRuns[i]!.toFixed(4)), ratio: Number((a / passRuns[i]!).toFixed(3)) })),
      base_auc: ab!.base.auc,
      slot1_auc_change: ab!.groups[1]?.auc.mean,
    };
    log(`ablation 26 slots x 3: ${ablSec.toFixed(3)} s vs 78 eval passes ${passSec.toFixed(3)} s (ratio of the medians of 3 runs ${(ablSec / passSec).toFixed(3)}; runs ${ablRuns.map((a, i) => (a / passRuns[i]!).toFixed(3)).join(' ')})`);
  }
  let gpu: Record<string, unknown> | undefined;
  if (model.backend === 'cuda') gpu = { ...loadCudaAddon()?.cudaInfo(), math: process.env.ABACUS_CUDA_MATH ?? 'tf32', eval_precision: model.evalPrecision };
  // a reduced-precision evaluation forward counts only with the test AUC within 0.002 of FP32:
  // the same weights evaluated in FP32
  let evalCheck: Record<string, unknown> | undefined;
  if (model.backend === 'cuda' && model.evalPrecision !== 'fp32') {
    const prev = process.env.ABACUS_CUDA_MATH;
    process.env.ABACUS_CUDA_MATH = 'fp32';
    let exact: RuntimeModel;
    try {
      exact = RuntimeModel.create({ ...ctr26Spec(o.vocab), seed: o.seed ?? 0 }, { backend: 'cuda' });
    } finally {
      if (prev === undefined) delete process.env.ABACUS_CUDA_MATH;
      else process.env.ABACUS_CUDA_MATH = prev;
    }
    exact.copyWeightsFrom(model);
    const a = (await model.evaluate(test, { batchSize: o.batch })).auc;
    const b = (await exact.evaluate(test, { batchSize: o.batch })).auc;
    evalCheck = { eval_precision: model.evalPrecision, test_auc: Number(a.toFixed(6)), test_auc_fp32: Number(b.toFixed(6)), diff: Number((a - b).toExponential(3)) };
    log(`eval precision ${model.evalPrecision}: test AUC ${a.toFixed(6)} vs FP32 ${b.toFixed(6)} on the same weights`);
  }
  let cpu: Record<string, unknown> = {};
  try {
    cpu = loadNativeAddon().cpuInfo();
  } catch {
    /* tfjs-only run */
  }
  if (streamDir) rmSync(streamDir, { recursive: true, force: true });
  return {
    bench: 'runtime',
    model: 'ctr26',
    backend: model.backend,
    train_from: o.stream ? 'shards (mapped, read natively)' : 'memory',
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
    eval_samples_per_s_median_call: Math.round(evalSpsMedian),
    eval_call_ms: evalCallMs,
    test_auc: Number(auc2.toFixed(4)),
    // unrounded: two runs that read the same rows in the same order give the same bits
    test_auc_exact: auc2,
    test_auc_epochs: 2,
    test_auc_schedule: `the peer's: 3 warm-up steps + 2 epochs${model.backend === 'cuda' ? ' + its 1 profiled step' : ''}, fresh model`,
    ...(seedsAuc ? { test_auc_seeds: seedsAuc } : {}),
    data: peer ? { source: 'the peer\'s own rows (peer_data.py)', ...peer } : { source: 'makeSyntheticCtr', seed: o.dataSeed ?? 0 },
    mlp_flops: { per_eval_sample: MLP_FLOPS_PER_SAMPLE, per_train_sample: 3 * MLP_FLOPS_PER_SAMPLE },
    achieved_mlp_tflops: { train: Number(((3 * MLP_FLOPS_PER_SAMPLE * tr.samplesPerSecond) / 1e12).toFixed(2)), eval: Number(((MLP_FLOPS_PER_SAMPLE * evalSps) / 1e12).toFixed(2)) },
    ...(trace ? { cupti: trace } : {}),
    ...(evalCheck ? { eval_precision_check: evalCheck } : {}),
    test_auc_after_timed_run: Number(ev.auc.toFixed(4)),
    final_train_loss: Number(tr.finalLoss.toFixed(4)),
    final_train_loss_exact: tr.finalLoss,
    ...(ablation ? { ablation } : {}),
    ...(gpu ? { gpu } : {}),
    machine: { hostname: os.hostname(), cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, ...cpu },
    date: new Date().toISOString(),
    command: o.command,
  };
}
