import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { EmbeddingCacheState } from '../binding';
import type { ModelSpecInput } from '../model-spec.schema';
import { buildOnnxModel } from '../onnx-export';
import type { RuntimeData } from '../dataset.types';
import { openShards, writeShard } from '../shard-format';
import { RuntimeModel } from '../runtime-model';
import { makeSyntheticCtr, sliceDataset } from './synthetic-ctr';

export interface OffloadCase {
  name: string;
  /** the device cache (rows of the tables' `tableRows`) and what its fills did */
  cache: EmbeddingCacheState | undefined;
  steps: number;
  /** largest |difference| against the tables on the device: predictions, parameters, optimizer state */
  maxPredDiff: number;
  maxParamDiff: number;
  maxOptDiff: number;
  /** the same between two models with the tables on the device (how far two instances' sums differ) */
  deviceVsDevice: { maxPredDiff: number; maxParamDiff: number; maxOptDiff: number };
  /** a fine-tune in place on a lane with the tables in host memory (copyStateFrom a device model) against one on the device */
  laneMaxPredDiff: number;
  /** the offloaded model saved and loaded with the tables on the device: its predictions unchanged */
  reloadMaxPredDiff: number;
  /** the ONNX export of the offloaded model's checkpoint, byte for byte that of the model on the device */
  onnxSameAsDevice: boolean;
  /** the same offloaded fit again (the same slots, sums and updates on every run) */
  repeat: { maxPredDiff: number; maxParamDiff: number; maxOptDiff: number };
  /** early stopping with the best epoch restored (the cache written back and emptied), against the
   * device model doing the same; restored: whether the best epoch was not the last */
  restoreBest: { restored: boolean; bestEpoch: number; maxPredDiff: number };
  /** shared embeddings (a DataBank version's rows, setSlotRows) put into two slots of a new model, one
   * frozen, then a fine-tune, against the device model doing the same; frozenKept: the frozen slot's
   * rows, read back after it, are the rows put in to the bit */
  sharedEmbedding: { maxPredDiff: number; frozenKept: boolean };
  /** training streamed from the host (ABACUS_CUDA_STREAM=1: the batches packed and copied in as they
   * go) with the tables offloaded, against the device tables streamed the same way */
  streamed: { maxPredDiff: number; steps: number };
  /** the same from shards on disk (mapped; the batches' rows gathered from windows held on the GPU) */
  streamedShards: { maxPredDiff: number; steps: number };
}

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};

/**
 * A model created with ABACUS_CUDA_CACHE_ROWS set to `cache` (a number of rows), or with
 * ABACUS_HBM_LOAD_FACTORS set to it (a string: per-table load factors), or with neither (null); both
 * are read when the CUDA model is made.
 */
function create(spec: ModelSpecInput, cache: number | string | null): RuntimeModel {
  return withEnv(
    {
      ABACUS_CUDA_CACHE_ROWS: typeof cache === 'number' ? String(cache) : undefined,
      ABACUS_HBM_LOAD_FACTORS: typeof cache === 'string' ? cache : undefined,
    },
    () => RuntimeModel.create(spec, { backend: 'cuda' }),
  );
}

/** fn() with these environment variables set (undefined: unset), each restored afterwards. */
function withEnv<T>(vars: Record<string, string | undefined>, fn: () => T): T {
  const had = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const put = (v: Record<string, string | undefined>) => {
    for (const [k, x] of Object.entries(v))
      if (x === undefined) delete process.env[k];
      else process.env[k] = x;
  };
  put(vars);
  try {
    return fn();
  } finally {
    put(had);
  }
}

function compare(a: RuntimeModel, b: RuntimeModel, pa: Float32Array, pb: Float32Array) {
  const ta = new Map(a.tensors().map((t) => [t.name, t.data]));
  const oa = new Map(a.optimizerTensors().map((t) => [t.name, t.data]));
  let maxParamDiff = 0,
    maxOptDiff = 0;
  for (const t of b.tensors()) maxParamDiff = Math.max(maxParamDiff, maxDiff(ta.get(t.name)!, t.data));
  for (const t of b.optimizerTensors()) maxOptDiff = Math.max(maxOptDiff, maxDiff(oa.get(t.name)!, t.data));
  return { maxPredDiff: maxDiff(pa, pb), maxParamDiff, maxOptDiff };
}

/**
 * Training with the embedding tables in host memory and a device cache of their rows, against the
 * tables on the device: the same spec, data, seed and steps (several hundred), FP32 products (TF32
 * products differ between model instances by themselves). Per spec, a cache of every row (each row
 * at its own index: the same sort keys and sums) and a small one (a tenth of the rows: rows evicted
 * and read back every step), each compared on predictions, every parameter and every optimizer
 * value (sparse Adam / Adagrad state carried with its rows); then a fine-tune in place on a lane
 * with its tables in host memory, and the offloaded model's checkpoint loaded with the tables on the
 * device. Two device models are compared the same way, for the scale of float summation order.
 */
export async function runOffloadParity(): Promise<OffloadCase[]> {
  const had = process.env.ABACUS_CUDA_MATH;
  process.env.ABACUS_CUDA_MATH = 'fp32';
  const syn = makeSyntheticCtr({ rows: 40_000, numeric: 4, slots: 4, vocab: 20_000, maxLen: 3, seed: 13, padding: 0.1 });
  const train = sliceDataset(syn.dataset, 0, 30_000);
  const val = sliceDataset(syn.dataset, 30_000, 40_000);
  const tableRows = 4 * 20_000;
  const specs: { name: string; spec: ModelSpecInput }[] = [
    {
      name: 'sum, sparse Adam',
      spec: {
        numeric: ['num0', 'num1', 'num2', 'num3'],
        slots: [0, 1, 2, 3].map((s) => ({ name: `slot${s}`, vocab: 20_000 })),
        embeddingDim: 8,
        hidden: [32, 16],
        optimizer: { sparse: { kind: 'adam', lr: 0.01 }, dense: { lr: 3e-3 } },
        seed: 2,
      },
    },
    {
      name: 'mean, wide, Adagrad',
      spec: {
        numeric: ['num0', 'num1', 'num2', 'num3'],
        slots: [0, 1, 2, 3].map((s) => ({ name: `slot${s}`, vocab: 20_000 })),
        pooling: 'mean',
        wide: true,
        embeddingDim: 16,
        hidden: [32],
        optimizer: { sparse: { kind: 'adagrad', lr: 0.05 }, dense: { lr: 3e-3 } },
        seed: 5,
      },
    },
  ];
  const fit = { epochs: 3, batchSize: 256, seed: 1 };
  const out: OffloadCase[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), 'abacus-offload-'));
  try {
    // the training rows as three shards on disk, for training streamed from them
    const files = [0, 1, 2].map((k) => path.join(dir, `train-${k}.shard`));
    for (const [k, f] of files.entries()) await writeShard(f, sliceDataset(train, k * 10_000, (k + 1) * 10_000));
    const shards = await openShards(files);
    for (const { name, spec } of specs) {
      const dev = create(spec, null);
      const r = await dev.train(train, fit);
      const pDev = await dev.predict(val);
      const dev2 = create(spec, null);
      await dev2.train(train, fit);
      const deviceVsDevice = compare(dev, dev2, pDev, await dev2.predict(val));
      for (const [label, rows] of [
        ['every row cached', tableRows],
        ['a tenth of the rows cached', tableRows / 10],
        // a part of the cache for each table: one whole (its rows at their own slots), three evicting
        ['per-table load factors slot0=1, slot1=0.5, slot2=0.1, slot3=0.05', 'slot0=1,slot1=0.5,slot2=0.1,slot3=0.05'],
        ['every row cached, per-table load factors of 1', '1'],
      ] as const) {
        const m = create(spec, rows);
        await m.train(train, fit);
        const p = await m.predict(val);
        const cache = m.embeddingCache;
        const d = compare(m, dev, p, pDev);
        const again = create(spec, rows);
        await again.train(train, fit);
        const repeat = compare(m, again, p, await again.predict(val));
        // a fine-tune in place: lanes restored from the device model, one offloaded, one not
        const lane = create(spec, rows);
        const laneDev = create(spec, null);
        const tune = { epochs: 1, batchSize: 256, seed: 9, maxSteps: 60 };
        lane.copyStateFrom(dev);
        laneDev.copyStateFrom(dev);
        await lane.train(train, tune);
        await laneDev.train(train, tune);
        const laneMaxPredDiff = maxDiff(await lane.predict(val), await laneDev.predict(val));
        // the offloaded model's checkpoint, loaded with the tables on the device
        const ckpt = path.join(dir, `${name.replace(/\W+/g, '-')}-${String(rows).replace(/\W+/g, '-')}`);
        await m.save(ckpt);
        const had2 = process.env.ABACUS_CUDA_CACHE_ROWS;
        delete process.env.ABACUS_CUDA_CACHE_ROWS;
        const back = await RuntimeModel.load(ckpt, { backend: 'cuda' });
        if (had2 !== undefined) process.env.ABACUS_CUDA_CACHE_ROWS = had2;
        const reloadMaxPredDiff = maxDiff(await back.predict(val), p);
        // exports read the host copy: the offloaded model's ONNX against the device model's
        const devCkpt = path.join(dir, `${name.replace(/\W+/g, '-')}-device-${String(rows).replace(/\W+/g, '-')}`);
        await dev.save(devCkpt);
        const [a, b] = await Promise.all([buildOnnxModel(ckpt), buildOnnxModel(devCkpt)]);
        const onnxSameAsDevice = Buffer.from(a.bytes).equals(Buffer.from(b.bytes));
        // early stopping on validation logloss (the rare ids overfit after an epoch or two), the best epoch restored
        const es = { epochs: 6, batchSize: 256, seed: 1, validationFraction: 0.2, earlyStopping: { patience: 4, monitor: 'logloss' as const, restoreBest: true } };
        const esOff = create(spec, rows);
        const esDev = create(spec, null);
        const re = await esOff.train(train, es);
        await esDev.train(train, es);
        const restoreBest = { restored: re.bestEpoch !== re.epochs - 1, bestEpoch: re.bestEpoch, maxPredDiff: maxDiff(await esOff.predict(val), await esDev.predict(val)) };
        // shared embeddings: slot0's and slot1's rows of the trained device model (a version another
        // line published) put into new models, slot0 frozen; a fine-tune; then slot0 read back
        const D = spec.embeddingDim!;
        const ids = Int32Array.from({ length: 20_000 }, (_, i) => i);
        const devT = new Map(dev.tensors().map((t) => [t.name, t.data]));
        const rowsOf = (slot: number) => devT.get('embedding.table')!.slice(slot * 20_000 * D, (slot + 1) * 20_000 * D);
        const wideOf = (slot: number) => devT.get('wide.table')?.slice(slot * 20_000, (slot + 1) * 20_000) ?? null;
        const share = async (x: RuntimeModel) => {
          await x.setSlotRows('slot0', ids, rowsOf(0), wideOf(0), true);
          await x.setSlotRows('slot1', ids, rowsOf(1), wideOf(1), false);
          await x.train(train, { epochs: 1, batchSize: 256, seed: 4, maxSteps: 80 });
          return x.predict(val);
        };
        const sh = create(spec, rows);
        const pSh = await share(sh);
        const pShDev = await share(create(spec, null));
        const after = new Map(sh.tensors().map((t) => [t.name, t.data])).get('embedding.table')!;
        const sharedEmbedding = { maxPredDiff: maxDiff(pSh, pShDev), frozenKept: maxDiff(after.subarray(0, 20_000 * D), rowsOf(0)) === 0 };
        // training streamed from the host, offloaded tables against device tables
        const hadStream = process.env.ABACUS_CUDA_STREAM;
        process.env.ABACUS_CUDA_STREAM = '1';
        let streamed: OffloadCase['streamed'], streamedShards: OffloadCase['streamedShards'];
        try {
          const both = async (data: RuntimeData) => {
            const so = create(spec, rows);
            const sd = create(spec, null);
            const rs = await so.train(data, { epochs: 1, batchSize: 256, seed: 6 });
            await sd.train(data, { epochs: 1, batchSize: 256, seed: 6 });
            return { maxPredDiff: maxDiff(await so.predict(val), await sd.predict(val)), steps: rs.steps };
          };
          streamed = await both(train);
          streamedShards = await both(shards);
        } finally {
          if (hadStream === undefined) delete process.env.ABACUS_CUDA_STREAM;
          else process.env.ABACUS_CUDA_STREAM = hadStream;
        }
        out.push({ name: `${name}, ${label}`, cache, steps: r.steps, ...d, deviceVsDevice, laneMaxPredDiff, reloadMaxPredDiff, onnxSameAsDevice, repeat, restoreBest, sharedEmbedding, streamed, streamedShards });
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (had === undefined) delete process.env.ABACUS_CUDA_MATH;
    else process.env.ABACUS_CUDA_MATH = had;
  }
  return out;
}

/**
 * The models no longer referenced freed before a measurement (node --expose-gc; without it, nothing):
 * a model's native memory goes with its finalizer, which must not unpin and free gigabytes of host
 * memory in the middle of another model's timed steps.
 */
async function collectModels() {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return;
  gc();
  await new Promise((r) => setImmediate(r));
  gc();
}

/**
 * Training throughput with the embedding tables in host memory against on the device: ctr26's model
 * (26 slots of `vocab` ids, dim 16, sparse Adam) on Zipf(`zipf`) ids, batch `batch`, `steps` timed
 * steps after a warm-up, the tables on the device and then with a budget of each of `budgets` (a
 * fraction of the tables and their state: one cache over every table) and with each of `loadFactors`
 * as every table's load factor (a cache of that share of the rows, a part for each table); per run samples a second of the epochs' steps (the train
 * call's time from its first step, less its validation; the wall time a step beside it) and the cache's
 * hit rate, rows read in and written back a step.
 */
export async function runOffloadBench(o: {
  vocab: number;
  zipf: number;
  batch: number;
  steps: number;
  batches: number;
  budgets: number[];
  loadFactors?: number[];
  streamed?: boolean;
}) {
  const { ctr26Spec } = await import('./ctr26');
  const t0 = performance.now();
  const data = makeSyntheticCtr({ rows: o.batch * o.batches, numeric: 13, slots: 26, vocab: o.vocab, maxLen: 4, seed: 3, zipf: o.zipf });
  // streamed: the rows as four shards on disk, every run's training streamed from them
  // (ABACUS_CUDA_STREAM=1: windows held on the device, the batches gathered from them)
  const dir = o.streamed ? mkdtempSync(path.join(tmpdir(), 'abacus-offload-bench-')) : null;
  let trainData: RuntimeData = data.dataset;
  if (dir) {
    const files = [0, 1, 2, 3].map((k) => path.join(dir, `rows-${k}.shard`));
    const per = Math.ceil(data.dataset.rows / 4);
    for (const [k, f] of files.entries()) await writeShard(f, sliceDataset(data.dataset, k * per, Math.min(data.dataset.rows, (k + 1) * per)));
    trainData = await openShards(files);
  }
  const hadStream = process.env.ABACUS_CUDA_STREAM;
  if (dir) process.env.ABACUS_CUDA_STREAM = '1';
  const dataMs = Math.round(performance.now() - t0);
  const spec = ctr26Spec(o.vocab);
  const tableBytes = 26 * o.vocab * 16 * 4 * 3;
  const runs: Record<string, unknown>[] = [];
  // the tables on the device, then each budget (one cache over every table), then each load factor
  // (every table its part of that share of its rows: a cache of the same size, split by table)
  const settings = [null, ...o.budgets.map((f) => ({ f, split: false })), ...(o.loadFactors ?? []).map((f) => ({ f, split: true }))];
  for (const setting of settings) {
    await collectModels();
    const fraction = setting?.f ?? null;
    const m = withEnv(
      {
        ABACUS_HBM_BUDGET_GB: setting && !setting.split ? String((tableBytes * setting.f) / 2 ** 30) : undefined,
        ABACUS_HBM_LOAD_FACTORS: setting?.split ? String(setting.f) : undefined,
      },
      () => RuntimeModel.create(spec, { backend: 'cuda' }),
    );
    await m.train(trainData, { epochs: 100, batchSize: o.batch, seed: 1, maxSteps: 30 });
    const before = m.embeddingCache;
    const t1 = performance.now();
    const r = await m.train(trainData, { epochs: 100, batchSize: o.batch, seed: 2, maxSteps: o.steps });
    const wall = (performance.now() - t1) / 1000;
    // the epochs' steps: the call's time (which starts after its setup: split, data to the device)
    // less its validation, the same for every run (the wall time's share of it shrinks with the steps)
    const s = r.seconds - (r.evalSeconds ?? 0);
    const after = m.embeddingCache;
    const loads = after && before ? after.loads - before.loads : 0;
    const hits = after && before ? after.hits - before.hits : 0;
    const writebacks = after && before ? after.writebacks - before.writebacks : 0;
    runs.push({
      cache: setting === null ? 'device tables' : setting.split ? 'per-table load factor' : 'one cache (budget)',
      budgetFraction: fraction,
      budgetGiB: fraction === null ? null : Math.round(((tableBytes * fraction) / 2 ** 30) * 1000) / 1000,
      cacheRows: after?.rows ?? null,
      samplesPerSecond: Math.round((r.steps * o.batch) / s),
      msPerStep: Math.round((s / r.steps) * 1e6) / 1e3,
      wallMsPerStep: Math.round((wall / r.steps) * 1e6) / 1e3,
      hitRate: after ? Math.round((hits / Math.max(1, hits + loads)) * 10000) / 10000 : null,
      loadsPerStep: after ? Math.round(loads / r.steps) : null,
      writebacksPerStep: after ? Math.round(writebacks / r.steps) : null,
      finalLoss: r.finalLoss,
    });
  }
  if (dir) {
    if (hadStream === undefined) delete process.env.ABACUS_CUDA_STREAM;
    else process.env.ABACUS_CUDA_STREAM = hadStream;
    rmSync(dir, { recursive: true, force: true });
  }
  const base = runs[0]!.samplesPerSecond as number;
  for (const x of runs) x.ofOnDevice = Math.round(((x.samplesPerSecond as number) / base) * 1000) / 1000;
  return { shape: { ...o, tableGiB: Math.round((tableBytes / 2 ** 30) * 1000) / 1000, tableRows: 26 * o.vocab }, dataMs, runs };
}

/**
 * Two models with the tables on the device, the same spec, rows, seed and steps, FP32 products: the
 * step where their training losses first differ (progress every step) and how far apart their
 * predictions end. The offload parity's sparse-Adam spec at `vocab` ids a slot. Settings that the
 * addon reads once per process (ABACUS_CUDA_SPARSE_LEADS, ABACUS_CUDA_NO_GRAPH, ABACUS_CUDA_SPARSE)
 * are compared across processes.
 */
export async function runDeterminism(o: { vocab: number; steps: number; pairs: number }) {
  process.env.ABACUS_CUDA_MATH = 'fp32';
  const syn = makeSyntheticCtr({ rows: 40_000, numeric: 4, slots: 4, vocab: o.vocab, maxLen: 3, seed: 13, padding: 0.1 });
  const train = sliceDataset(syn.dataset, 0, 30_000);
  const val = sliceDataset(syn.dataset, 30_000, 40_000);
  const spec: ModelSpecInput = {
    numeric: ['num0', 'num1', 'num2', 'num3'],
    slots: [0, 1, 2, 3].map((s) => ({ name: `slot${s}`, vocab: o.vocab })),
    embeddingDim: 8,
    hidden: [32, 16],
    optimizer: { sparse: { kind: 'adam', lr: 0.01 }, dense: { lr: 3e-3 } },
    seed: 2,
  };
  const fitOnce = async () => {
    const m = RuntimeModel.create(spec, { backend: 'cuda' });
    const losses: number[] = [];
    await m.train(train, { epochs: 100, batchSize: 256, seed: 1, maxSteps: o.steps, progressEvery: 1 }, { onProgress: (p) => losses.push(p.loss) });
    return { losses, pred: await m.predict(val) };
  };
  const pairs = [];
  for (let k = 0; k < o.pairs; k++) {
    const a = await fitOnce();
    const b = await fitOnce();
    let first = -1;
    for (let i = 0; i < Math.min(a.losses.length, b.losses.length); i++)
      if (a.losses[i] !== b.losses[i]) {
        first = i + 1;
        break;
      }
    pairs.push({ firstDifferingStep: first, steps: a.losses.length, maxPredDiff: maxDiff(a.pred, b.pred) });
  }
  return { vocab: o.vocab, steps: o.steps, pairs };
}

/**
 * One pass of ctr26 over tables larger than the card: 26 slots of `vocab` ids (Zipf(`zipf`)) with the
 * tables in host memory under the budget (ABACUS_HBM_BUDGET_GB; unset, the default: half the GPU
 * memory free), against a baseline that hashes every id into `hashVocab` ids a slot with its tables
 * on the device (`side`: which of the two this process trains; each in a process of its own, so that
 * one's host memory is free for the other). The same `trainBatches` batches of `batch` rows train each model once through; AUC and
 * logloss on `testBatches` batches after them, untouched by training. Reports the model's creation
 * (its tables allocated and initialised), the train call (its setup, which registers the host store,
 * and the steps) and the cache's fills.
 */
export async function runOffloadBeyond(o: { vocab: number; hashVocab: number; zipf: number; batch: number; trainBatches: number; testBatches: number; side: 'full' | 'hashed' }) {
  const { ctr26Spec } = await import('./ctr26');
  const t0 = performance.now();
  const rows = o.batch * (o.trainBatches + o.testBatches);
  const data = makeSyntheticCtr({ rows, numeric: 13, slots: 26, vocab: o.vocab, maxLen: 4, seed: 3, zipf: o.zipf }).dataset;
  const vocab = o.side === 'full' ? o.vocab : o.hashVocab;
  if (o.side === 'hashed')
    for (const s of data.slots) for (let i = 0; i < s.ids.length; i++) if (s.ids[i]! >= 0) s.ids[i] = (Math.imul(s.ids[i]!, 0x9e3779b1) >>> 0) % o.hashVocab;
  const trainRows = o.batch * o.trainBatches;
  const train = sliceDataset(data, 0, trainRows);
  const test = sliceDataset(data, trainRows, rows);
  const dataSeconds = (performance.now() - t0) / 1000;
  const tableBytes = 26 * vocab * (16 * 3 + 3) * 4;
  // the baseline's tables on the device whatever the budget; the full tables under ABACUS_HBM_BUDGET_GB
  // (unset: the default, half the GPU memory free)
  const t1 = performance.now();
  const create = () => RuntimeModel.create(ctr26Spec(vocab), { backend: 'cuda' });
  const m = o.side === 'hashed' ? withEnv({ ABACUS_HBM_BUDGET_GB: '100000' }, create) : create();
  const createSeconds = (performance.now() - t1) / 1000;
  const t2 = performance.now();
  const r = await m.train(train, { epochs: 1, batchSize: o.batch, seed: 1 });
  const trainWallSeconds = (performance.now() - t2) / 1000;
  const steps = r.seconds - (r.evalSeconds ?? 0); // seconds starts after the setup
  const t3 = performance.now();
  const ev = await m.evaluate(test);
  const evalSeconds = (performance.now() - t3) / 1000;
  const c = m.embeddingCache;
  return {
    side: o.side,
    shape: { ...o, rows, tableRows: 26 * vocab, tableGiB: Math.round((tableBytes / 2 ** 30) * 1000) / 1000 },
    dataSeconds: Math.round(dataSeconds * 10) / 10,
    createSeconds: Math.round(createSeconds * 10) / 10,
    train: {
      steps: r.steps,
      wallSeconds: Math.round(trainWallSeconds * 10) / 10,
      setupSeconds: Math.round((r.setupSeconds ?? 0) * 10) / 10,
      stepSeconds: Math.round(steps * 1000) / 1000,
      msPerStep: Math.round((steps / r.steps) * 1e6) / 1e3,
      samplesPerSecond: Math.round((r.steps * o.batch) / steps),
      finalLoss: r.finalLoss,
    },
    test: { rows: test.rows, auc: ev.auc, logloss: ev.logloss, calibration: ev.calibration, evalSeconds: Math.round(evalSeconds * 10) / 10 },
    embeddingTables: c ? { placement: 'host memory, device cache', cacheRows: c.rows, tableRows: c.tableRows, hitRate: Math.round((c.hits / Math.max(1, c.hits + c.loads)) * 10000) / 10000, loads: c.loads, writebacks: c.writebacks } : { placement: 'device' },
  };
}
