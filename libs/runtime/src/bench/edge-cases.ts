import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { RuntimeModel } from '../runtime-model';
import type { BackendKind } from '../model-spec.schema';
import { makeSyntheticCtr } from './synthetic-ctr';

export interface EdgeCheck {
  name: string;
  ok: boolean;
  detail: string;
  ms: number;
}

/**
 * The shapes that once broke the native boundary, on any backend (the CUDA addon shares the CPU
 * addon's N-API layer): models with no numeric input or no slot (their empty parameter tensors came
 * back over a detached ArrayBuffer) and a diverged model (NaN predictions hung the AUC).
 */
export async function runEdgeCases(backend: BackendKind, log: (s: string) => void = () => undefined): Promise<EdgeCheck[]> {
  const out: EdgeCheck[] = [];
  const check = async (name: string, fn: () => Promise<string>) => {
    const t0 = Date.now();
    try {
      const detail = await fn();
      out.push({ name, ok: true, detail, ms: Date.now() - t0 });
    } catch (err) {
      out.push({ name, ok: false, detail: (err as Error).stack ?? String(err), ms: Date.now() - t0 });
    }
    const c = out[out.length - 1]!;
    log(`${c.ok ? 'PASS' : 'FAIL'} ${name} (${c.ms} ms): ${c.detail.split('\n')[0]}`);
  };
  for (const sh of [
    { name: 'no numeric inputs', numeric: 0, slots: 3, wide: false, predictFirst: false },
    { name: 'no numeric inputs, wide part', numeric: 0, slots: 2, wide: true, predictFirst: false },
    { name: 'no slots', numeric: 3, slots: 0, wide: true, predictFirst: false },
    { name: 'no slots, predicting before training', numeric: 3, slots: 0, wide: true, predictFirst: true },
    { name: 'no slots, no wide part', numeric: 3, slots: 0, wide: false, predictFirst: false },
  ]) {
    await check(`${sh.name}: tensor views usable, checkpoint round-trips`, async () => {
      const syn = makeSyntheticCtr({ rows: 4_000, numeric: sh.numeric, slots: sh.slots, vocab: 20, maxLen: 2, seed: 5 });
      const spec = {
        numeric: Array.from({ length: sh.numeric }, (_, i) => `num${i}`),
        slots: Array.from({ length: sh.slots }, (_, i) => ({ name: `slot${i}`, vocab: 20 })),
        embeddingDim: 4,
        wide: sh.wide,
        hidden: [8],
      };
      const m = RuntimeModel.create(spec, { backend, threads: 2 });
      if (m.backend !== backend) throw new Error(`asked for ${backend}, got ${m.backend}`);
      const stage = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
        try {
          return await fn();
        } catch (err) {
          throw new Error(`${what}: ${(err as Error).message}`, { cause: err });
        }
      };
      if (sh.predictFirst) await stage('predict before training', () => m.predict(syn.dataset));
      await stage('train', () => m.train(syn.dataset, { epochs: 1, batchSize: 256 }));
      for (const t of [...m.tensors(), ...m.optimizerTensors()]) new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      const dir = mkdtempSync(path.join(tmpdir(), 'abacus-edge-'));
      try {
        await stage('save', () => m.save(path.join(dir, 'ckpt')));
        const back = await stage('load', () => RuntimeModel.load(path.join(dir, 'ckpt'), { backend, threads: 2 }));
        const a = await stage('predict', () => m.predict(syn.dataset));
        const b = await stage('predict after load', () => back.predict(syn.dataset));
        let maxDiff = 0;
        for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i]! - b[i]!));
        if (maxDiff > 1e-6) throw new Error(`reloaded predictions differ by ${maxDiff}`);
        return `${m.tensors().length} tensors, reloaded predictions equal (max |Δ| ${maxDiff})`;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
  await check('diverged model: training with validation finishes, loss and AUC are NaN', async () => {
    const syn = makeSyntheticCtr({ rows: 4_000, numeric: 3, slots: 1, vocab: 5, maxLen: 1, seed: 1 });
    const spec = {
      numeric: ['num0', 'num1', 'num2'],
      slots: [{ name: 'slot0', vocab: 5 }],
      hidden: [16],
      wide: true,
      embeddingDim: 4,
      optimizer: { dense: { lr: 1e38 }, sparse: { lr: 1e38 } },
    };
    const m = RuntimeModel.create(spec, { backend, threads: 2 });
    const r = await m.train(syn.dataset, {
      epochs: 3,
      batchSize: 64,
      validationFraction: 0.1,
      earlyStopping: { patience: 1, monitor: 'auc', restoreBest: true },
    });
    const ev = await m.evaluate(syn.dataset);
    if (!Number.isNaN(r.finalLoss)) throw new Error(`final loss ${r.finalLoss}, expected NaN`);
    if (!Number.isNaN(ev.auc)) throw new Error(`AUC ${ev.auc}, expected NaN`);
    return `final loss ${r.finalLoss}, AUC ${ev.auc}, epochs ${r.epochs}`;
  });
  return out;
}
