import { afterEach, describe, expect, it } from 'vitest';

import { loadNativeAddon } from './binding';
import { makeSyntheticCtr, sliceDataset } from './bench/synthetic-ctr';
import type { ModelSpecInput } from './model-spec.schema';
import { RuntimeModel } from './runtime-model';

// The cpu backend's eval forward (predict / evaluate / ablate) runs in bf16 with FP32 accumulation
// where the CPU has AVX512-BF16; ABACUS_CPU_EVAL_PRECISION=fp32 selects the FP32 forward.
const syn = makeSyntheticCtr({ rows: 60_000, numeric: 6, slots: 5, vocab: 300, maxLen: 4, seed: 5, padding: 0.1 });
const train = sliceDataset(syn.dataset, 0, 40_000);
const test = sliceDataset(syn.dataset, 40_000, 60_000);
const spec: ModelSpecInput = {
  numeric: ['num0', 'num1', 'num2', 'num3', 'num4', 'num5'],
  slots: [0, 1, 2, 3, 4].map((s) => ({ name: `slot${s}`, vocab: 300 })),
  embeddingDim: 16,
  hidden: [100, 40], // not multiples of 32: exercises the padded panels
  wide: true,
  init: 'torch',
  optimizer: { sparse: { kind: 'adam', lr: 0.01 }, dense: { lr: 3e-3 } },
  seed: 3,
};
const saved = process.env.ABACUS_CPU_EVAL_PRECISION;
const setPrecision = (v: string | undefined) => {
  if (v === undefined) delete process.env.ABACUS_CPU_EVAL_PRECISION;
  else process.env.ABACUS_CPU_EVAL_PRECISION = v;
};

describe('cpu eval precision (bf16 forward vs FP32)', () => {
  afterEach(() => setPrecision(saved));

  it('bf16 where the CPU supports it, within 1e-3 AUC of FP32; FP32 (bit-identical) otherwise', async () => {
    const info = loadNativeAddon().cpuInfo();
    const m = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
    await m.train(train, { epochs: 2, batchSize: 512 });
    const groups = { groups: [['num0'], ['slot1'], ['num2', 'slot3']], repeats: 2, seed: 4, batchSize: 4096 };

    setPrecision('fp32');
    expect(loadNativeAddon().cpuInfo().evalPrecision).toBe('fp32');
    const p32 = await m.predict(test, { batchSize: 4096 });
    const e32 = await m.evaluate(test, { batchSize: 4096 });
    const a32 = await m.ablate(test, groups);

    // default: AMX-BF16 where present, vdpbf16ps on AMD, FP32 otherwise; a CPU without AVX512-BF16 is always FP32
    const noAvx512 = process.env.ABACUS_NO_AVX512 === '1';
    const expected = info.avx512bf16 && !noAvx512 && (info.amxBf16 || info.vendorAmd) ? 'bf16' : 'fp32';
    setPrecision(undefined);
    expect(loadNativeAddon().cpuInfo().evalPrecision).toBe(expected);
    // AVX512-BF16 without AMX on a non-AMD CPU defaults to FP32: run the vdpbf16ps kernel by name
    if (expected === 'fp32' && info.avx512bf16 && !noAvx512) setPrecision('avx512bf16');
    const expectedNow = loadNativeAddon().cpuInfo().evalPrecision;
    expect(expectedNow).toBe(info.avx512bf16 && !noAvx512 ? 'bf16' : 'fp32');
    const p = await m.predict(test, { batchSize: 1000 }); // another batch split: rows are independent
    const e = await m.evaluate(test, { batchSize: 4096 });
    const a = await m.ablate(test, groups);
    // ablation's unpermuted base is the same forward as evaluate()
    expect(Math.abs(a.base.auc - e.auc)).toBeLessThan(1e-9);

    let maxAbs = 0;
    for (let i = 0; i < p.length; i++) maxAbs = Math.max(maxAbs, Math.abs(p[i]! - p32[i]!));
    if (expectedNow === 'bf16') {
      expect(maxAbs).toBeGreaterThan(0); // the bf16 path really ran
      expect(maxAbs).toBeLessThan(0.02);
      expect(Math.abs(e.auc - e32.auc)).toBeLessThan(1e-3);
      expect(Math.abs(e.logloss - e32.logloss)).toBeLessThan(2e-3);
      for (const [i, g] of a.groups.entries()) expect(Math.abs(g.auc.mean - a32.groups[i]!.auc.mean)).toBeLessThan(1e-3);
    } else {
      expect(maxAbs).toBe(0);
      expect(e.auc).toBe(e32.auc);
      for (const [i, g] of a.groups.entries()) expect(g.auc.mean).toBe(a32.groups[i]!.auc.mean);
    }
    console.log(`eval kernel ${loadNativeAddon().cpuInfo().evalKernel}: max |p - p_fp32| ${maxAbs.toExponential(2)}, AUC ${e.auc.toFixed(6)} vs fp32 ${e32.auc.toFixed(6)}`);
  });

  it('single hidden layer: ablation swaps in the first layer and runs only the output layer', async () => {
    const m = RuntimeModel.create({ ...spec, hidden: [48] }, { backend: 'cpu', threads: 2 });
    await m.train(train, { epochs: 1, batchSize: 512 });
    const groups = { groups: [['num0'], ['slot2']], repeats: 1, seed: 2, batchSize: 3000 };
    setPrecision('fp32');
    const [e32, a32] = [await m.evaluate(test), await m.ablate(test, groups)];
    setPrecision(undefined);
    const [e, a] = [await m.evaluate(test), await m.ablate(test, groups)];
    expect(Math.abs(a.base.auc - e.auc)).toBeLessThan(1e-9);
    expect(Math.abs(e.auc - e32.auc)).toBeLessThan(1e-3);
    for (const [i, g] of a.groups.entries()) expect(Math.abs(g.auc.mean - a32.groups[i]!.auc.mean)).toBeLessThan(1e-3);
  });
});
