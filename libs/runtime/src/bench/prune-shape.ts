import type { ColumnarDataset } from '../dataset.types';
import { rowRange, selectRows } from '../dataset-views';
import type { BackendKind, ModelSpecInput } from '../model-spec.schema';
import { RuntimeModel } from '../runtime-model';
import { computeMetrics } from '../metrics';
import { loadCudaAddon } from '../binding';
import { makeSyntheticCtr, sliceDataset } from './synthetic-ctr';

export interface PruneShapeOptions {
  backend: BackendKind;
  /** rows of the fitted split; the validation split is a quarter of it */
  rows: number;
  numeric: number;
  slots: number;
  /** fits in flight at once (the worker's ABACUS_GPU_LANES) */
  lanes: number;
  /** retraining checks, and seeds per check */
  checks: number;
  seeds: number;
  /** permutation estimates (each: one group, `repeats` repeats, `folds` fold calls) */
  estimates: number;
  folds: number;
  repeats: number;
  warmSteps: number;
  batch: number;
  epochs: number;
  /** cuda: a CUPTI trace of 20 training steps of the base model (per-kernel times, the steps' span) */
  trace?: boolean;
  /** ids a row holds at most per slot (default 2 each; e.g. single-id categoricals 1, multi-id lists 10) */
  slotMaxLen?: number[];
  /** every slot's vocabulary (default 2000) */
  vocab?: number;
  /** per slot, its own vocabulary (e.g. 3 for a categorical with three values: a row in a third of a batch) */
  slotVocab?: number[];
}

const ms = (t0: number) => Math.round((performance.now() - t0) * 10) / 10;
const sum = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : 0;
};

/** the default model's shape (dim 8, mean pooling, wide, hidden [64, 32], sparse Adam) over synthetic inputs */
function defaultShapeSpec(
  numeric: number,
  slots: number,
  vocab = 2000,
  slotVocab?: number[],
): ModelSpecInput & { numeric: string[]; slots: { name: string; vocab: number }[] } {
  return {
    numeric: Array.from({ length: numeric }, (_, j) => `num${j}`),
    slots: Array.from({ length: slots }, (_, s) => ({ name: `slot${s}`, vocab: slotVocab?.[s] ?? vocab })),
    pooling: 'mean',
    embeddingDim: 8,
    wide: true,
    hidden: [64, 32],
    optimizer: { dense: { kind: 'adam', lr: 1e-3 }, sparse: { kind: 'adam', lr: 0.01 } },
    seed: 1,
  };
}

/**
 * The work of a subtract's prune and confirm steps at the default model's shape (dim 8, mean pooling,
 * wide, hidden [64, 32], sparse Adam, batch 1024) on synthetic rows, outside the platform, each phase
 * timed: the base model's training; `estimates` permutation estimates the way the prune makes them
 * (one ablate call per validation fold); `checks` retraining checks of `seeds` warm fits each, run
 * `lanes` at a time on lane models restored in place (copy, train warmSteps steps on a per-seed row
 * sample, evaluate on the validation split); and the confirm's three whole-model fits at once.
 * Per fit: the copy, training and evaluation times; per estimate: its fold calls.
 */
export async function runPruneShape(o: PruneShapeOptions): Promise<Record<string, unknown>> {
  const t00 = performance.now();
  const syn = makeSyntheticCtr({
    rows: Math.round(o.rows * 1.25),
    numeric: o.numeric,
    slots: o.slots,
    vocab: o.vocab ?? 2000,
    maxLen: 2,
    ...(o.slotMaxLen ? { slotMaxLen: o.slotMaxLen } : {}),
    ...(o.slotVocab ? { slotVocab: o.slotVocab } : {}),
    seed: 5,
  });
  const train = sliceDataset(syn.dataset, 0, o.rows);
  const validation = sliceDataset(syn.dataset, o.rows, syn.dataset.rows);
  const dataMs = ms(t00);
  const spec = defaultShapeSpec(o.numeric, o.slots, o.vocab ?? 2000, o.slotVocab);
  const { numeric, slots } = spec;
  const inputs = [...numeric, ...slots.map((s) => s.name)];
  const opts = { backend: o.backend };

  // the base model
  let t0 = performance.now();
  const base = RuntimeModel.create(spec, opts);
  const fit = await base.train(train, { epochs: o.epochs, batchSize: o.batch, seed: 1 });
  const baseTrainMs = ms(t0);
  t0 = performance.now();
  const baseEval = await base.evaluate(validation);
  const baseEvalMs = ms(t0);

  // where a step's time goes: kernels (their sum per step) against the steps' span on the device
  let trace: Record<string, unknown> | undefined;
  const addon = o.trace && base.backend === 'cuda' ? loadCudaAddon() : null;
  if (addon) {
    const steps = 20;
    await base.train(train, { epochs: 1, batchSize: o.batch, maxSteps: steps, seed: 2 });
    const why = addon.traceStart();
    const tt = performance.now();
    await base.train(train, { epochs: 1, batchSize: o.batch, maxSteps: steps, seed: 2 });
    const wallMs = ms(tt);
    const t = JSON.parse(addon.traceStop(steps)) as Record<string, unknown> & {
      kernels?: { name: string; count: number; ns_per_region: number }[];
    };
    trace = why
      ? { error: why }
      : {
          steps,
          wallMsPerStep: Math.round((wallMs / steps) * 1000) / 1000,
          ...Object.fromEntries(Object.entries(t).filter(([k]) => k !== 'kernels')),
          kernels: (t.kernels ?? []).slice(0, 40).map((k) => ({
            name: k.name.slice(0, 120),
            perStep: k.count / steps,
            usPerStep: Math.round(k.ns_per_region / 100) / 10,
          })),
        };
  }

  // permutation estimates: one ablate call per fold (rowRange views of the validation rows)
  const bounds = Array.from({ length: o.folds + 1 }, (_, k) => Math.round((validation.rows * k) / o.folds));
  const folds = bounds.slice(1).map((hi, k) => rowRange(validation, bounds[k]!, hi));
  const estimateMs: number[] = [];
  const foldCallMs: number[] = [];
  for (let e = 0; e < o.estimates; e++) {
    const group = inputs.slice(0, 1 + (e % 3)).map((_, i) => inputs[(e + i * 7) % inputs.length]!);
    const te = performance.now();
    for (const [k, f] of folds.entries()) {
      const tf = performance.now();
      await base.ablate(f, { groups: [group], repeats: o.repeats, seed: 100 + e * 31 + k });
      foldCallMs.push(ms(tf));
    }
    estimateMs.push(ms(te));
  }

  // warm checks: `seeds` fits per check, `lanes` at a time, on lane models restored in place
  const sample = new Map<number, ColumnarDataset>();
  const capRows = o.warmSteps * o.batch;
  for (let s = 0; s < o.seeds; s++) {
    const idx = Int32Array.from(
      { length: Math.min(capRows, train.rows) },
      (_, i) => Math.floor((i * train.rows) / Math.min(capRows, train.rows) + s) % train.rows,
    );
    sample.set(s, selectRows(train, idx));
  }
  const idle: RuntimeModel[] = [];
  let created = 0;
  const per: { copyMs: number; trainMs: number; evalMs: number }[] = [];
  const checkMs: number[] = [];
  const tChecks = performance.now();
  for (let c = 0; c < o.checks; c++) {
    const off = inputs.slice(0, 1 + (c % 4)).map((_, i) => inputs[(c * 3 + i * 5) % inputs.length]!);
    const tasks = Array.from({ length: o.seeds }, (_, s) => s);
    const tc = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(o.lanes, tasks.length) }, async () => {
        while (next < tasks.length) {
          const s = tasks[next++]!;
          const m = idle.pop() ?? (created++, RuntimeModel.create(spec, opts));
          const a = performance.now();
          m.copyStateFrom(base);
          m.switchOff(off);
          const b = performance.now();
          await m.train(sample.get(s)!, { epochs: 1, batchSize: o.batch, seed: 10 + s, maxSteps: o.warmSteps });
          const c2 = performance.now();
          await m.evaluate(validation, { offThread: true });
          per.push({ copyMs: b - a, trainMs: c2 - b, evalMs: performance.now() - c2 });
          idle.push(m);
        }
      }),
    );
    checkMs.push(ms(tc));
  }
  const checksMs = ms(tChecks);

  // one lane model's evaluation apart: the whole call (metrics on this thread, and on the addon's
  // thread as the checks above run it), the forward alone (predictions to the host), and the metrics
  // computed from them on this thread (median of 5 each)
  let evalParts: Record<string, number> | undefined;
  const probe = idle[0];
  if (probe) {
    const whole: number[] = [];
    const offThread: number[] = [];
    const fwd: number[] = [];
    const met: number[] = [];
    for (let k = 0; k < 5; k++) {
      let t = performance.now();
      await probe.evaluate(validation);
      whole.push(performance.now() - t);
      t = performance.now();
      await probe.evaluate(validation, { offThread: true });
      offThread.push(performance.now() - t);
      t = performance.now();
      const p = await probe.predict(validation);
      fwd.push(performance.now() - t);
      t = performance.now();
      computeMetrics(p, validation.labels);
      met.push(performance.now() - t);
    }
    evalParts = {
      rows: validation.rows,
      evaluateMs: Math.round(median(whole) * 10) / 10,
      evaluateOffThreadMs: Math.round(median(offThread) * 10) / 10,
      predictMs: Math.round(median(fwd) * 10) / 10,
      metricsMs: Math.round(median(met) * 10) / 10,
      deviceForwardMs: Math.round((probe.lastPredictDeviceMs ?? 0) * 100) / 100,
    };
  }

  // the confirm: three whole-model fits at once
  t0 = performance.now();
  const confirmFits = await Promise.all(
    [1, 2, 3].map(async (seed) => {
      const m = RuntimeModel.create(spec, opts);
      const tf = performance.now();
      const r = await m.train(train, { epochs: o.epochs, batchSize: o.batch, seed });
      const trainMs = ms(tf);
      const te = performance.now();
      await m.evaluate(validation);
      return { trainMs, evalMs: ms(te), steps: r.steps };
    }),
  );
  const confirmMs = ms(t0);
  return {
    shape: { ...o, validationRows: validation.rows, inputs: inputs.length },
    dataMs,
    base: {
      trainMs: baseTrainMs,
      steps: fit.steps,
      msPerStep: Math.round((baseTrainMs / fit.steps) * 1000) / 1000,
      evalMs: baseEvalMs,
      auc: baseEval.auc,
    },
    estimates: {
      totalMs: sum(estimateMs),
      medianMs: median(estimateMs),
      foldCalls: foldCallMs.length,
      medianFoldCallMs: median(foldCallMs),
    },
    checks: {
      totalMs: checksMs,
      medianCheckMs: median(checkMs),
      fits: per.length,
      laneModels: created,
      medianCopyMs: Math.round(median(per.map((p) => p.copyMs)) * 100) / 100,
      medianTrainMs: Math.round(median(per.map((p) => p.trainMs))),
      medianEvalMs: Math.round(median(per.map((p) => p.evalMs))),
      msPerWarmStep: Math.round((median(per.map((p) => p.trainMs)) / o.warmSteps) * 1000) / 1000,
      ...(evalParts ? { evaluation: evalParts } : {}),
    },
    confirm: { totalMs: confirmMs, fits: confirmFits },
    ...(trace ? { trace } : {}),
  };
}

/**
 * The confirm step's fits the way the platform trains them, one alone and three at once, with each
 * of its ingredients on or off: early stopping on a held-out tenth (up to 10 epochs, patience 2, the
 * best epoch restored), the rows read from mapped shards instead of memory, and the model written
 * to disk after training. Says which of them keeps three fits on one GPU from overlapping.
 */
export async function runConfirmShape(o: { backend: BackendKind; rows: number; numeric: number; slots: number; dir: string }) {
  const { writeShard, openShards } = await import('../shard-format');
  const path = await import('node:path');
  const syn = makeSyntheticCtr({ rows: o.rows, numeric: o.numeric, slots: o.slots, vocab: 2000, maxLen: 2, seed: 5 });
  const files = [0, 1, 2, 3].map((k) => path.join(o.dir, `part-${k}.shard`));
  for (const [k, f] of files.entries())
    await writeShard(f, sliceDataset(syn.dataset, Math.floor((k * o.rows) / 4), Math.floor(((k + 1) * o.rows) / 4)));
  const shards = await openShards(files);
  const spec = defaultShapeSpec(o.numeric, o.slots);
  const variants = [
    { name: 'memory, 3 epochs', data: syn.dataset, early: false, save: false },
    { name: 'memory, early stopping', data: syn.dataset, early: true, save: false },
    { name: 'shards, 3 epochs', data: shards, early: false, save: false },
    { name: 'memory, 3 epochs, saved', data: syn.dataset, early: false, save: true },
    { name: 'shards, early stopping, saved (the platform)', data: shards, early: true, save: true },
  ];
  const out: Record<string, unknown>[] = [];
  for (const v of variants) {
    const fit = async (seed: number) => {
      const m = RuntimeModel.create(spec, { backend: o.backend });
      const t0 = performance.now();
      const r = await m.train(v.data, {
        epochs: v.early ? 10 : 3,
        batchSize: 1024,
        seed,
        ...(v.early
          ? { validationFraction: 0.1, earlyStopping: { patience: 2, monitor: 'auc' as const, restoreBest: true } }
          : {}),
        progressEvery: 100,
      });
      const trainMs = ms(t0);
      const t1 = performance.now();
      if (v.save) await m.save(path.join(o.dir, `model-${seed}-${Math.random().toString(36).slice(2)}`));
      return { trainMs, saveMs: ms(t1), steps: r.steps, epochs: r.epochs };
    };
    const t0 = performance.now();
    const alone = await fit(1);
    const aloneMs = ms(t0);
    const t1 = performance.now();
    const three = await Promise.all([11, 12, 13].map(fit));
    out.push({ variant: v.name, aloneMs, alone, threeAtOnceMs: ms(t1), three });
  }
  return { shape: { ...o, dir: undefined }, variants: out };
}

/**
 * Independent CPU fits of one batch (a check's seeds, the confirm's models) trained one after another
 * on every thread, against `atOnce` at a time on a share of the threads each: the choice behind
 * ABACUS_HOST_FITS. Same rows, model shape and epochs for every fit; wall time per arrangement.
 */
export async function runHostFits(o: {
  rows: number;
  numeric: number;
  slots: number;
  threads: number;
  fits: number[];
  atOnce: number[];
  epochs: number;
  repeats: number;
}) {
  const syn = makeSyntheticCtr({ rows: o.rows, numeric: o.numeric, slots: o.slots, vocab: 2000, maxLen: 2, seed: 5 });
  const spec = defaultShapeSpec(o.numeric, o.slots);
  const fit = async (threads: number, seed: number) => {
    const m = RuntimeModel.create(spec, { backend: 'cpu', threads });
    await m.train(syn.dataset, { epochs: o.epochs, batchSize: 1024, seed });
  };
  const arrange = async (n: number, k: number) => {
    const threads = Math.max(1, Math.floor(o.threads / k));
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(k, n) }, async () => {
        while (next < n) await fit(threads, ++next);
      }),
    );
    return { atOnce: k, threadsEach: threads, ms: ms(t0) };
  };
  const runs: { fits: number; repeat: number; arrangements: { atOnce: number; threadsEach: number; ms: number }[] }[] = [];
  for (let r = 0; r < o.repeats; r++)
    for (const n of o.fits) {
      const arrangements = [];
      for (const k of o.atOnce) arrangements.push(await arrange(n, k));
      runs.push({ fits: n, repeat: r, arrangements });
    }
  return { shape: o, runs };
}

/**
 * What one launch for K candidate sets could save, before building it: K fine-tunes of the default
 * model's shape run the way a prune round runs them today (K lane models at once, each restored in
 * place, `warmSteps` steps, then evaluated), against one model K times as wide (K × the inputs,
 * K × every hidden layer: the size of K block-diagonal lanes in one set of kernels) trained the same
 * steps once and evaluated once. The wide model's time is the floor of a batched launch's kernels
 * (its block mask and K-output head would add to it); median of `repeats` after a warm-up each.
 */
export async function runLaunchProxy(o: {
  backend: BackendKind;
  rows: number;
  numeric: number;
  slots: number;
  ks: number[];
  warmSteps: number;
  batch: number;
  repeats: number;
  slotMaxLen?: number[];
  slotVocab?: number[];
}) {
  const validationRows = Math.round(o.rows / 4);
  const data = (k: number) => {
    const syn = makeSyntheticCtr({
      rows: o.rows + validationRows,
      numeric: o.numeric * k,
      slots: o.slots * k,
      vocab: 2000,
      maxLen: 2,
      ...(o.slotMaxLen ? { slotMaxLen: Array.from({ length: k }, () => o.slotMaxLen!).flat() } : {}),
      ...(o.slotVocab ? { slotVocab: Array.from({ length: k }, () => o.slotVocab!).flat() } : {}),
      seed: 5,
    });
    return { train: sliceDataset(syn.dataset, 0, o.rows), validation: sliceDataset(syn.dataset, o.rows, syn.dataset.rows) };
  };
  const specOf = (k: number) => {
    const s = defaultShapeSpec(o.numeric * k, o.slots * k, 2000, o.slotVocab ? Array.from({ length: k }, () => o.slotVocab!).flat() : undefined);
    return { ...s, hidden: (s.hidden ?? []).map((h) => h * k) };
  };
  const opts = { backend: o.backend };
  const one = data(1);
  const base = RuntimeModel.create(specOf(1), opts);
  await base.train(one.train, { epochs: 1, batchSize: o.batch, seed: 1 });
  const lanes: RuntimeModel[] = [];
  const out: Record<string, unknown>[] = [];
  for (const k of o.ks) {
    while (lanes.length < k) lanes.push(RuntimeModel.create(specOf(1), opts));
    // today: k lane models at once, each restored, trained and evaluated
    const round = async () => {
      const t0 = performance.now();
      const tr: number[] = [];
      await Promise.all(
        lanes.slice(0, k).map(async (m, j) => {
          m.copyStateFrom(base);
          const a = performance.now();
          await m.train(one.train, { epochs: 1, batchSize: o.batch, seed: 10 + j, maxSteps: o.warmSteps });
          tr.push(performance.now() - a);
          await m.evaluate(one.validation, { offThread: true });
        }),
      );
      return { wallMs: performance.now() - t0, trainMs: Math.max(...tr) };
    };
    // the floor of one launch: one model k times as wide
    const wide = data(k);
    const w = RuntimeModel.create(specOf(k), opts);
    const wideRound = async () => {
      const t0 = performance.now();
      await w.train(wide.train, { epochs: 1, batchSize: o.batch, seed: 10, maxSteps: o.warmSteps });
      const trainMs = performance.now() - t0;
      await w.predict(wide.validation);
      return { wallMs: performance.now() - t0, trainMs };
    };
    await round();
    await wideRound();
    const a: { wallMs: number; trainMs: number }[] = [];
    const b: { wallMs: number; trainMs: number }[] = [];
    for (let r = 0; r < o.repeats; r++) {
      a.push(await round());
      b.push(await wideRound());
    }
    const med = (xs: { wallMs: number; trainMs: number }[], f: 'wallMs' | 'trainMs') => Math.round(median(xs.map((x) => x[f])) * 10) / 10;
    out.push({
      k,
      lanesAtOnce: { wallMs: med(a, 'wallMs'), trainMs: med(a, 'trainMs') },
      oneWideModel: { wallMs: med(b, 'wallMs'), trainMs: med(b, 'trainMs') },
      trainRatio: Math.round((med(a, 'trainMs') / Math.max(1e-9, med(b, 'trainMs'))) * 100) / 100,
    });
  }
  return { shape: { ...o, validationRows }, results: out };
}
