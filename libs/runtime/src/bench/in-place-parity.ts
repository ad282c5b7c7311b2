import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ColumnarDataset } from '../dataset.types';
import type { BackendKind, ModelSpecInput } from '../model-spec.schema';
import { RuntimeModel } from '../runtime-model';
import { makeSyntheticCtr, sliceDataset } from './synthetic-ctr';

export interface InPlaceCase {
  name: string;
  off: string[];
  /** largest |difference| of a prediction, of a parameter and of an optimizer value between the two ways */
  maxPredDiff: number;
  maxParamDiff: number;
  maxOptDiff: number;
  auc: [inPlace: number, copied: number];
  /** ms of copyStateFrom (the in-place start) against loading the checkpoint */
  copyMs: number;
  loadMs: number;
}

/** The rows with `off` switched off by copying them: numeric columns held at `held`, slots as empty bags. */
function switchedOffCopy(d: ColumnarDataset, off: Set<string>, held: (j: number) => number): ColumnarDataset {
  const w = d.numericNames.length;
  const numeric = d.numeric.slice();
  d.numericNames.forEach((n, j) => {
    if (off.has(n)) for (let i = 0; i < d.rows; i++) numeric[i * w + j] = held(j);
  });
  return {
    ...d,
    numeric,
    slots: d.slots.map((s) =>
      off.has(s.name) ? { name: s.name, ids: new Int32Array(0), offsets: new Int32Array(d.rows + 1) } : s,
    ),
  };
}

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};

/** The parity's rows: 30,000 to fit on, 10,000 to predict (4 numeric inputs, 4 slots of 300 ids with padding). */
export function inPlaceRows(): { train: ColumnarDataset; val: ColumnarDataset } {
  const syn = makeSyntheticCtr({ rows: 40_000, numeric: 4, slots: 4, vocab: 300, maxLen: 3, seed: 11, padding: 0.1 });
  return { train: sliceDataset(syn.dataset, 0, 30_000), val: sliceDataset(syn.dataset, 30_000, 40_000) };
}

/** The parity's first spec: sum pooling, sparse Adam. */
export const SUM_SPARSE_ADAM: ModelSpecInput = {
  numeric: ['num0', 'num1', 'num2', 'num3'],
  slots: [0, 1, 2, 3].map((s) => ({ name: `slot${s}`, vocab: 300 })),
  embeddingDim: 8,
  hidden: [32, 16],
  optimizer: { sparse: { kind: 'adam', lr: 0.01 }, dense: { lr: 3e-3 } },
  seed: 2,
};

/**
 * A fine-tune started in place (a fresh model given a trained one's state with copyStateFrom, inputs
 * switched off inside it with switchOff, over the rows as they are) against the same fine-tune the
 * old way (the trained model's checkpoint loaded, trained on a copy of the rows with the inputs
 * switched off): the same seed and steps, so the same model is expected — bit for bit on the CPU,
 * within float summation order on the GPU. Two specs (sum pooling + sparse Adam; mean pooling +
 * wide + Adagrad with padding ids), several switched-off sets; one lane model reused across them,
 * so a lane's earlier fit and switched-off inputs must leave nothing behind.
 */
export async function runInPlaceParity(
  backend: BackendKind,
  o: { threads?: number; device?: number } = {},
): Promise<InPlaceCase[]> {
  const { train, val } = inPlaceRows();
  const specs: { name: string; spec: ModelSpecInput }[] = [
    { name: 'sum, sparse Adam', spec: SUM_SPARSE_ADAM },
    {
      name: 'mean, wide, Adagrad',
      spec: {
        numeric: ['num0', 'num1', 'num2', 'num3'],
        slots: [0, 1, 2, 3].map((s) => ({ name: `slot${s}`, vocab: 300 })),
        pooling: 'mean',
        wide: true,
        embeddingDim: 16,
        hidden: [32],
        optimizer: { sparse: { kind: 'adagrad', lr: 0.05 }, dense: { lr: 3e-3 } },
        seed: 5,
      },
    },
  ];
  const sets = [[], ['num1'], ['slot2'], ['num0', 'slot1', 'slot3'], ['num0', 'num1', 'num2', 'num3', 'slot0']];
  const opts = { ...(o.threads ? { threads: o.threads } : {}), ...(o.device !== undefined ? { device: o.device } : {}), backend };
  const out: InPlaceCase[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), 'abacus-in-place-'));
  try {
    for (const { name, spec } of specs) {
      const base = RuntimeModel.create(spec, opts);
      await base.train(train, { epochs: 1, batchSize: 512, seed: 1 });
      const ckpt = path.join(dir, name.replace(/\W+/g, '-'));
      await base.save(ckpt);
      const mean = base
        .tensors()
        .find((t) => t.name === 'normalization.mean')!
        .data.slice();
      const lane = RuntimeModel.create(spec, opts);
      for (const [k, off] of sets.entries()) {
        const fit = { epochs: 1, batchSize: 256, seed: 7 + k, maxSteps: 60 };
        const t0 = performance.now();
        lane.copyStateFrom(base);
        lane.switchOff(off);
        const copyMs = performance.now() - t0;
        await lane.train(train, fit);
        const p1 = await lane.predict(val);
        const t1 = performance.now();
        const old = await RuntimeModel.load(ckpt, opts);
        const loadMs = performance.now() - t1;
        const gone = new Set(off);
        await old.train(
          switchedOffCopy(train, gone, (j) => mean[j]!),
          fit,
        );
        const valOff = switchedOffCopy(val, gone, (j) => mean[j]!);
        const p2 = await old.predict(valOff);
        const a = new Map(lane.tensors().map((t) => [t.name, t.data]));
        const ao = new Map(lane.optimizerTensors().map((t) => [t.name, t.data]));
        let maxParamDiff = 0,
          maxOptDiff = 0;
        for (const t of old.tensors()) maxParamDiff = Math.max(maxParamDiff, maxDiff(a.get(t.name)!, t.data));
        for (const t of old.optimizerTensors()) maxOptDiff = Math.max(maxOptDiff, maxDiff(ao.get(t.name)!, t.data));
        const [e1, e2] = [await lane.evaluate(val), await old.evaluate(valOff)];
        out.push({ name, off, maxPredDiff: maxDiff(p1, p2), maxParamDiff, maxOptDiff, auc: [e1.auc, e2.auc], copyMs, loadMs });
      }
      lane.switchOff([]);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}
