// Checks the bf16 evaluation forward against FP32 on this machine's CPU (AMX-BF16 on Xeon hosts, AVX512-BF16 on AMD),
// for several layer shapes. Standalone: node_modules/.bin/esbuild libs/runtime/bench/eval-precision-check.ts --bundle
// --platform=node --outfile=DIR/check.js, copy build/Release/abacus_runtime.node into DIR, run `node DIR/check.js`.
import path from 'node:path';
import { loadNativeAddon, setAddonPath } from '../src/binding';
import { makeSyntheticCtr, sliceDataset } from '../src/bench/synthetic-ctr';
import type { ModelSpecInput } from '../src/model-spec.schema';
import { RuntimeModel } from '../src/runtime-model';

function check(ok: boolean, what: string) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${what}`);
  if (!ok) process.exitCode = 1;
}

async function run(hidden: number[], dim: number) {
  const syn = makeSyntheticCtr({ rows: 60_000, numeric: 6, slots: 5, vocab: 300, maxLen: 4, seed: 5, padding: 0.1 });
  const train = sliceDataset(syn.dataset, 0, 40_000);
  const test = sliceDataset(syn.dataset, 40_000, 60_000);
  const spec: ModelSpecInput = {
    numeric: ['num0', 'num1', 'num2', 'num3', 'num4', 'num5'],
    slots: [0, 1, 2, 3, 4].map((s) => ({ name: `slot${s}`, vocab: 300 })),
    embeddingDim: dim, hidden, wide: true, init: 'torch',
    optimizer: { sparse: { kind: 'adam', lr: 0.01 }, dense: { lr: 3e-3 } }, seed: 3,
  };
  const m = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
  await m.train(train, { epochs: 2, batchSize: 512 });
  const groups = { groups: [['num0'], ['slot1'], ['num2', 'slot3']], repeats: 2, seed: 4, batchSize: 4096 };
  process.env.ABACUS_CPU_EVAL_PRECISION = 'fp32';
  const p32 = await m.predict(test, { batchSize: 4096 });
  const e32 = await m.evaluate(test, { batchSize: 4096 });
  const a32 = await m.ablate(test, groups);
  delete process.env.ABACUS_CPU_EVAL_PRECISION;
  const info = loadNativeAddon().cpuInfo();
  const p = await m.predict(test, { batchSize: 1000 });
  const e = await m.evaluate(test, { batchSize: 4096 });
  const a = await m.ablate(test, groups);
  let maxAbs = 0;
  for (let i = 0; i < p.length; i++) maxAbs = Math.max(maxAbs, Math.abs(p[i]! - p32[i]!));
  const tag = `hidden ${JSON.stringify(hidden)} dim ${dim} kernel ${info.evalKernel}`;
  console.log(`${tag}: max|dp| ${maxAbs.toExponential(2)} auc ${e.auc.toFixed(6)} vs fp32 ${e32.auc.toFixed(6)}`);
  check(info.evalPrecision === 'bf16', `${tag}: a bf16 kernel ran (${info.evalKernel})`);
  check(maxAbs > 0 && maxAbs < 0.02, `${tag}: predictions within 0.02 of fp32`);
  check(Math.abs(e.auc - e32.auc) < 1e-3, `${tag}: AUC within 1e-3 of fp32`);
  check(Math.abs(a.base.auc - e.auc) < 1e-9, `${tag}: ablation base = evaluate`);
  for (const [i, g] of a.groups.entries()) check(Math.abs(g.auc.mean - a32.groups[i]!.auc.mean) < 1e-3, `${tag}: ablation group ${i} within 1e-3`);
}

setAddonPath(path.join(__dirname, 'abacus_runtime.node'));
(async () => {
  console.log(JSON.stringify(loadNativeAddon().cpuInfo()));
  await run([100, 40], 16);
  await run([48], 8);
  await run([512, 256], 16);
  await run([33, 17, 5], 4);
})();
