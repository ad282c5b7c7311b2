import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';

import type { ColumnarDataset } from '../dataset.types';
import type { ModelSpecInput } from '../model-spec.schema';
import { RuntimeModel } from '../runtime-model';
import { mulberry32 } from '../tfjs-backend';
import { sliceDataset } from './synthetic-ctr';

export interface StressOptions {
  /** model shapes to try */
  cases: number;
  seed: number;
  /** cases in flight at once (each on its own models and CUDA streams), as a worker's lanes */
  lanes: number;
  backend: 'cpu' | 'cuda';
  /** CUDA device (default 0) */
  device?: number;
  /** at most this many rows per case (default 30,000) */
  maxRows?: number;
}

export interface StressCase {
  index: number;
  shape: string;
  ok: boolean;
  error?: string;
  testAuc?: number;
  ms: number;
}

/** A random small model and planted data: features 1-40, vocabularies 2-20,000, odd batch sizes. */
export function stressShape(seed: number, maxRows = 30_000) {
  const r = mulberry32(seed * 7919 + 17);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const features = 1 + Math.floor(r() * 40);
  const numeric = Math.floor(r() * (features + 1));
  const slots = features - numeric;
  const vocab = Array.from({ length: slots }, () => Math.max(2, Math.round(Math.exp(Math.log(2) + r() * (Math.log(20_000) - Math.log(2))))));
  const spec: ModelSpecInput = {
    numeric: Array.from({ length: numeric }, (_, j) => `n${j}`),
    slots: vocab.map((v, s) => ({ name: `s${s}`, vocab: v })),
    pooling: pick(['sum', 'mean'] as const),
    embeddingDim: pick([1, 3, 4, 8, 8, 16]),
    wide: r() < 0.6,
    hidden: pick([[], [16], [64, 32], [64, 32], [104, 56, 8], [256, 128]]),
    optimizer: { dense: { lr: 2e-3 }, sparse: { kind: pick(['adam', 'adagrad'] as const), lr: 1e-2 } },
    seed: Math.floor(r() * 1000),
  };
  const rows = Math.min(maxRows, 1500 + Math.floor(r() * 28_500));
  const batch = pick([16, 37, 64, 100, 256, 333, 512, 1000, 1024, 1024, 4096]);
  const maxLen = pick([1, 1, 2, 4]);
  const padding = pick([0, 0, 0.2]);
  return { spec, rows, batch, maxLen, padding, dataSeed: Math.floor(r() * 1e9) };
}

/**
 * Planted data for a shape: the label depends on the first numeric input and the first slot's id
 * parity; the last 20 % of rows (the test split) also draw ids the training rows never hold (the
 * top 10 % of each vocabulary), as new ids arriving after training do.
 */
export function stressData(shape: ReturnType<typeof stressShape>): { train: ColumnarDataset; test: ColumnarDataset } {
  const r = mulberry32(shape.dataSeed);
  const n = shape.rows, nn = shape.spec.numeric!.length, slots = shape.spec.slots!;
  const testFrom = Math.floor(n * 0.8);
  const gauss = () => Math.sqrt(-2 * Math.log(Math.max(r(), 1e-300))) * Math.cos(2 * Math.PI * r());
  const numeric = new Float32Array(n * nn);
  for (let i = 0; i < numeric.length; i++) numeric[i] = gauss();
  const data = slots.map((s, k) => {
    const offsets = new Int32Array(n + 1);
    const ids: number[] = [];
    const seen = Math.max(1, Math.floor(s.vocab * 0.9));
    for (let i = 0; i < n; i++) {
      const len = k === 0 ? 1 : 1 + Math.floor(r() * shape.maxLen);
      const top = i >= testFrom ? s.vocab : seen;
      for (let q = 0; q < len; q++) ids.push(q > 0 && r() < shape.padding ? -1 : Math.floor(r() * top));
      offsets[i + 1] = ids.length;
    }
    return { name: s.name, ids: Int32Array.from(ids), offsets };
  });
  const labels = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let z = -0.4;
    if (nn > 0) z += 1.2 * numeric[i * nn]!;
    if (slots.length > 0) z += (data[0]!.ids[data[0]!.offsets[i]!]! % 2) * 1.5 - 0.75;
    labels[i] = r() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
  }
  const all: ColumnarDataset = { rows: n, numericNames: shape.spec.numeric!, numeric, slots: data, labels };
  return { train: sliceDataset(all, 0, testFrom), test: sliceDataset(all, testFrom, n) };
}

/**
 * The garbage collector, so dropped models are finalized (on the JS thread) while other models
 * train, as in a long-lived worker: node's --expose-gc when given, else exposed here.
 */
function collector(): (() => void) | undefined {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  try {
    v8.setFlagsFromString('--expose-gc');
    return vm.runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
}
const gc = collector();

/**
 * One case, as the workflows use the runtime: a model trained with early stopping on a held-out
 * fraction, evaluated, predicted and ablated on the test rows; saved, loaded into a fresh model and
 * fine-tuned (a retraining check); and three fold models cross-fitted at once (several models alive,
 * each on its own stream). Models are dropped as they would be after a trial, and collected (gc,
 * when node runs with --expose-gc) while other cases still run.
 */
async function runCase(index: number, o: StressOptions, dir: string): Promise<StressCase> {
  const t0 = Date.now();
  const shape = stressShape(o.seed + index, o.maxRows);
  const s = shape.spec;
  const desc = `#${index}: ${s.numeric!.length} numeric, ${s.slots!.length} slots (vocab ${s.slots!.map((x) => x.vocab).join('/') || '-'}), dim ${s.embeddingDim}, hidden [${s.hidden!.join(',')}], ${s.pooling}${s.wide ? ', wide' : ''}, ${s.optimizer!.sparse!.kind}, ${shape.rows} rows, batch ${shape.batch}`;
  const create = () => RuntimeModel.create(s, { backend: o.backend, threads: 2, ...(o.device !== undefined ? { device: o.device } : {}) });
  try {
    const { train, test } = stressData(shape);
    const m = create();
    const tr = await m.train(train, { epochs: 3, batchSize: shape.batch, seed: 1, validationFraction: 0.15, earlyStopping: { patience: 1, monitor: 'auc', restoreBest: true } });
    if (!Number.isFinite(tr.finalLoss)) throw new Error(`training diverged (loss ${tr.finalLoss})`);
    const ev = await m.evaluate(test);
    const p = await m.predict(test, { batchSize: shape.batch });
    if (p.length !== test.rows || p.some((v) => !(v >= 0 && v <= 1))) throw new Error('predictions outside [0, 1]');
    const names = [...s.numeric!, ...s.slots!.map((x) => x.name)];
    const groups = names.slice(0, 3).map((x) => [x]);
    if (names.length > 3) groups.push(names.slice(3, 6));
    const ab = await m.ablate(test, { groups, repeats: 2, seed: 3, batchSize: shape.batch });
    if (!Number.isFinite(ab.base.auc)) throw new Error('ablation base AUC not finite');
    const cdir = path.join(dir, `case-${index}`);
    await m.save(cdir);
    const ft = await RuntimeModel.load(cdir, { backend: o.backend, threads: 2, ...(o.device !== undefined ? { device: o.device } : {}) });
    await ft.train(sliceDataset(train, 0, Math.floor(train.rows / 2)), { epochs: 1, batchSize: shape.batch, seed: 2, validationFraction: 0, maxSteps: 40 });
    await ft.evaluate(test);
    fs.rmSync(cdir, { recursive: true, force: true });
    // cross-fitting: three fold models at once
    const k = 3, per = Math.floor(train.rows / k);
    const folds = await Promise.all(
      Array.from({ length: k }, async (_, f) => {
        const fm = create();
        const from = f * per, to = f === k - 1 ? train.rows : (f + 1) * per;
        const rest = f === 0 ? sliceDataset(train, to, train.rows) : sliceDataset(train, 0, from);
        await fm.train(rest, { epochs: 1, batchSize: shape.batch, seed: 10 + f, validationFraction: 0 });
        return (await fm.evaluate(sliceDataset(train, from, to))).auc;
      }),
    );
    if (folds.some((a) => !Number.isFinite(a))) throw new Error('a fold AUC is not finite');
    gc?.();
    return { index, shape: desc, ok: true, testAuc: ev.auc, ms: Date.now() - t0 };
  } catch (e) {
    return { index, shape: desc, ok: false, error: (e as Error).message, ms: Date.now() - t0 };
  }
}

/**
 * Many random small models in one process, `lanes` at a time: what a long-lived GPU worker does
 * across experiments. A case fails only on an error (a CUDA fault, a diverged or non-finite result).
 */
export async function runCudaStress(o: StressOptions, log: (s: string) => void = () => {}): Promise<StressCase[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-stress-'));
  const out: StressCase[] = [];
  let next = 0;
  const lane = async () => {
    while (next < o.cases) {
      const i = next++;
      const c = await runCase(i, o, dir);
      out.push(c);
      log(`${c.ok ? 'PASS' : 'FAIL'} ${c.shape} ${c.ok ? `test AUC ${c.testAuc!.toFixed(3)}` : c.error} (${c.ms} ms)`);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, o.lanes) }, lane));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return out.sort((a, b) => a.index - b.index);
}
