import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import * as ort from 'onnxruntime-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { ColumnarDataset } from './dataset.types';
import type { ModelSpecInput } from './model-spec.schema';
import { exportOnnx } from './onnx-export';
import { RuntimeModel } from './runtime-model';
import { mulberry32 } from './tfjs-backend';

const TOL = 1e-5;

/**
 * 3 numeric inputs (some NaN / Inf = missing), a single-id slot (some rows only padding), a multi-id
 * slot of 0..6 ids with padding (some rows empty, some all padding).
 */
function makeData(rows: number, seed: number): ColumnarDataset {
  const r = mulberry32(seed);
  const numeric = new Float32Array(rows * 3);
  for (let i = 0; i < numeric.length; i++) numeric[i] = (r() - 0.3) * 4 + (i % 3);
  numeric[4] = NaN;
  numeric[9] = Infinity;
  numeric[17] = -Infinity;
  const single = { name: 'site', ids: new Int32Array(rows), offsets: Int32Array.from({ length: rows + 1 }, (_, i) => i) };
  for (let i = 0; i < rows; i++) single.ids[i] = i % 11 === 5 ? -1 : Math.floor(r() * 30);
  const ids: number[] = [];
  const offsets = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) {
    const len = i % 13 === 3 ? 0 : Math.floor(r() * 7);
    for (let k = 0; k < len; k++) ids.push(i % 17 === 2 || r() < 0.2 ? -1 : Math.floor(r() * 50));
    offsets[i + 1] = ids.length;
  }
  const labels = Float32Array.from({ length: rows }, (_, i) => {
    const z = numeric[i * 3]! * 0.8 + (single.ids[i]! % 3) - 1 + (ids[offsets[i]!] ?? 0) / 50;
    return r() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
  });
  return {
    rows,
    numericNames: ['price', 'age', 'score'],
    numeric,
    slots: [single, { name: 'history', ids: Int32Array.from(ids), offsets }],
    labels,
  };
}

/** ORT feeds: numeric as is; each slot padded with -1 to the longest list (at least 1). */
function feeds(d: ColumnarDataset): Record<string, ort.Tensor> {
  const out: Record<string, ort.Tensor> = { numeric: new ort.Tensor('float32', d.numeric, [d.rows, d.numericNames.length]) };
  for (const s of d.slots) {
    let L = 1;
    for (let i = 0; i < d.rows; i++) L = Math.max(L, s.offsets[i + 1]! - s.offsets[i]!);
    const ids = new BigInt64Array(d.rows * L).fill(-1n);
    for (let i = 0; i < d.rows; i++)
      for (let p = s.offsets[i]!; p < s.offsets[i + 1]!; p++) ids[i * L + p - s.offsets[i]!] = BigInt(s.ids[p]!);
    out[s.name] = new ort.Tensor('int64', ids, [d.rows, L]);
  }
  return out;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

async function runOnnx(file: string, d: ColumnarDataset): Promise<{ probability: Float32Array; logit: Float32Array }> {
  const session = await ort.InferenceSession.create(file, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  try {
    const res = await session.run(feeds(d));
    expect(res.probability!.dims).toEqual([d.rows, 1]);
    expect(res.logit!.dims).toEqual([d.rows, 1]);
    return { probability: res.probability!.data as Float32Array, logit: res.logit!.data as Float32Array };
  } finally {
    await session.release();
  }
}

const sigmoidInv = (p: Float32Array) => Float64Array.from(p, (x) => Math.log(x / (1 - x)));

describe('ONNX export checked by onnxruntime (its WebAssembly build)', () => {
  let dir: string;
  const precision = process.env.ABACUS_CPU_EVAL_PRECISION;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'abacus-onnx-'));
    // the runtime's predict may run the MLP in bf16 on AVX512-BF16 / AMX CPUs: compare with FP32
    process.env.ABACUS_CPU_EVAL_PRECISION = 'fp32';
  });
  afterAll(async () => {
    if (precision === undefined) delete process.env.ABACUS_CPU_EVAL_PRECISION;
    else process.env.ABACUS_CPU_EVAL_PRECISION = precision;
    await rm(dir, { recursive: true, force: true });
  });

  const train = makeData(512, 7);
  const test = makeData(203, 11);

  const cases: { pooling: 'sum' | 'mean'; wide: boolean; hidden: number[] }[] = [
    { pooling: 'sum', wide: false, hidden: [16, 8, 4] },
    { pooling: 'mean', wide: false, hidden: [12] },
    { pooling: 'sum', wide: true, hidden: [8, 8] },
    { pooling: 'mean', wide: true, hidden: [16, 8, 4] },
  ];
  for (const c of cases)
    it(`trained model: ${c.pooling} pooling, wide ${c.wide ? 'on' : 'off'}, hidden [${c.hidden.join(', ')}] — predictions equal RuntimeModel.predict within ${TOL}`, async () => {
      const spec: ModelSpecInput = {
        numeric: ['price', 'age', 'score'],
        slots: [
          { name: 'site', vocab: 30 },
          { name: 'history', vocab: 50 },
        ],
        pooling: c.pooling,
        wide: c.wide,
        embeddingDim: 6,
        hidden: c.hidden,
        init: 'torch',
        seed: 5,
        optimizer: { dense: { lr: 0.01 }, sparse: { kind: 'adagrad', lr: 0.1 } },
      };
      const model = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
      const before = await model.predict(test); // initial weights
      const tr = await model.train(train, { epochs: 2, batchSize: 64, maxSteps: 12, seed: 1 });
      expect(tr.steps).toBe(12);
      const expected = await model.predict(test);
      expect(maxAbsDiff(before, expected)).toBeGreaterThan(1e-3); // training moved the weights
      if (c.wide) {
        const wide = model.tensors().find((t) => t.name === 'wide.numeric')!;
        expect(wide.data.some((x) => x !== 0)).toBe(true); // the wide part was trained too
      }

      const ckpt = path.join(dir, `${c.pooling}-${c.wide}-${c.hidden.length}`);
      await model.save(ckpt);
      const file = path.join(ckpt, 'model.onnx');
      const info = await exportOnnx(ckpt, file);
      expect((await stat(file)).size).toBe(info.bytes);
      expect(info.inputs.map((i) => i.name)).toEqual(['numeric', 'site', 'history']);
      expect(info.outputs.map((o) => o.name)).toEqual(['probability', 'logit']);

      const got = await runOnnx(file, test);
      expect(maxAbsDiff(got.probability, expected)).toBeLessThanOrEqual(TOL);
      // the logit output is the probability's inverse sigmoid
      const inv = sigmoidInv(expected);
      let worst = 0;
      for (let i = 0; i < inv.length; i++)
        if (expected[i]! > 1e-3 && expected[i]! < 1 - 1e-3) worst = Math.max(worst, Math.abs(inv[i]! - got.logit[i]!));
      expect(worst).toBeLessThan(1e-3);

      // the checkpoint loaded back predicts the same, and so does its own export
      const loaded = await RuntimeModel.load(ckpt, { backend: 'cpu', threads: 2 });
      const again = await loaded.predict(test);
      expect(maxAbsDiff(again, expected)).toBeLessThanOrEqual(TOL);
      const ckpt2 = `${ckpt}-reloaded`;
      await loaded.save(ckpt2);
      const file2 = path.join(ckpt2, 'model.onnx');
      await exportOnnx(ckpt2, file2);
      expect(maxAbsDiff((await runOnnx(file2, test)).probability, again)).toBeLessThanOrEqual(TOL);
    });

  it('a row whose lists are all padding pools to zero exactly like the runtime (mean pooling)', async () => {
    const spec: ModelSpecInput = {
      numeric: ['price', 'age', 'score'],
      slots: [
        { name: 'site', vocab: 30 },
        { name: 'history', vocab: 50 },
      ],
      pooling: 'mean',
      wide: true,
      embeddingDim: 4,
      hidden: [8],
      seed: 9,
    };
    const model = RuntimeModel.create(spec, { backend: 'cpu', threads: 1 });
    await model.train(train, { epochs: 1, batchSize: 128, maxSteps: 4 });
    for (const t of model.tensors()) if (t.name.startsWith('wide.')) t.data.forEach((_, i) => (t.data[i] = Math.cos(i) * 0.2));
    // 4 rows: all padding / empty lists / one id / NaN numerics with a list of padding then an id
    const d: ColumnarDataset = {
      rows: 4,
      numericNames: ['price', 'age', 'score'],
      numeric: Float32Array.from([1, 2, 3, 0, 0, 0, -1, 5, 0.5, NaN, NaN, 7]),
      slots: [
        { name: 'site', ids: Int32Array.from([-1, 3, 29, -1]), offsets: Int32Array.from([0, 1, 1, 2, 4]) },
        { name: 'history', ids: Int32Array.from([-1, -1, -1, 49, -1, -1, 0]), offsets: Int32Array.from([0, 3, 3, 4, 7]) },
      ],
      labels: new Float32Array(4),
    };
    const expected = await model.predict(d);
    const ckpt = path.join(dir, 'padding');
    await model.save(ckpt);
    await exportOnnx(ckpt, path.join(ckpt, 'model.onnx'));
    const got = await runOnnx(path.join(ckpt, 'model.onnx'), d);
    expect(maxAbsDiff(got.probability, expected)).toBeLessThanOrEqual(TOL);
  });

  it('a model with numeric inputs only (wide on) matches too', async () => {
    const spec: ModelSpecInput = { numeric: ['price', 'age', 'score'], wide: true, embeddingDim: 4, hidden: [6, 3], seed: 2 };
    const model = RuntimeModel.create(spec, { backend: 'cpu', threads: 1 });
    const numericOnly: ColumnarDataset = { ...train, slots: [] };
    await model.train(numericOnly, { epochs: 1, batchSize: 64, maxSteps: 8 });
    const d: ColumnarDataset = { ...test, slots: [] };
    const expected = await model.predict(d);
    const ckpt = path.join(dir, 'numeric-only');
    await model.save(ckpt);
    const info = await exportOnnx(ckpt, path.join(ckpt, 'model.onnx'));
    expect(info.inputs).toEqual([{ name: 'numeric', type: 'float32', shape: ['batch', 3] }]);
    const session = await ort.InferenceSession.create(path.join(ckpt, 'model.onnx'));
    const res = await session.run({ numeric: new ort.Tensor('float32', d.numeric, [d.rows, 3]) });
    await session.release();
    expect(maxAbsDiff(res.probability!.data as Float32Array, expected)).toBeLessThanOrEqual(TOL);
  });

  it('writes a valid protobuf with opset and metadata, and refuses an opset below 13', async () => {
    const spec: ModelSpecInput = { slots: [{ name: 'site', vocab: 30 }], embeddingDim: 4, hidden: [4] };
    const model = RuntimeModel.create(spec, { backend: 'cpu', threads: 1 });
    const ckpt = path.join(dir, 'slots-only');
    await model.save(ckpt);
    const info = await exportOnnx(ckpt, path.join(ckpt, 'model.onnx'), { opset: 17 });
    expect(info.opset).toBe(17);
    expect(info.inputs).toEqual([{ name: 'site', type: 'int64', shape: ['batch', 'site_length'] }]);
    const session = await ort.InferenceSession.create(await readFile(path.join(ckpt, 'model.onnx')));
    expect(session.inputNames).toEqual(['site']);
    expect([...session.outputNames].sort()).toEqual(['logit', 'probability']);
    await session.release();
    await expect(exportOnnx(ckpt, path.join(ckpt, 'x.onnx'), { opset: 12 })).rejects.toThrow(/opset 12/);
    await expect(exportOnnx(path.join(dir, 'missing'), path.join(dir, 'x.onnx'))).rejects.toThrow(/not a runtime checkpoint/);
  });
});
