import { cudaAddonAvailable, cudaUnavailableReason, loadCudaAddon } from '../binding';
import { resolveBackend, RuntimeModel } from '../runtime-model';
import { ctr26Spec } from './ctr26';
import { makeSyntheticCtr, sliceDataset } from './synthetic-ctr';

/**
 * One ctr26 model per visible GPU, trained one after another and then all at once (what a worker
 * with several GPUs does: one trial per GPU). Also reports what `backend: 'auto'` resolves to.
 */
export async function runMultiGpu(o: { batch: number; steps: number; vocab: number; batches: number; command: string }, log: (s: string) => void = () => {}): Promise<Record<string, unknown>> {
  const auto = resolveBackend('auto');
  log(`backend 'auto' resolves to: ${auto}${auto === 'cuda' ? '' : ` (${cudaUnavailableReason()})`}`);
  if (!cudaAddonAvailable()) return { auto_backend: auto, error: cudaUnavailableReason() };
  const addon = loadCudaAddon()!;
  const info = addon.cudaInfo();
  const n = info.devices;
  const { dataset } = makeSyntheticCtr({ rows: o.batch * o.batches, numeric: 13, slots: 26, vocab: o.vocab, maxLen: 4, seed: 0 });
  const train = sliceDataset(dataset, 0, Math.floor((o.batches * 4) / 5) * o.batch);
  const models = Array.from({ length: n }, (_, d) => RuntimeModel.create({ ...ctr26Spec(o.vocab), seed: d }, { backend: 'cuda', device: d }));
  const opts = { epochs: Math.ceil((o.steps * o.batch) / train.rows), batchSize: o.batch, maxSteps: o.steps, shuffle: false, progressEvery: 1_000_000 };
  for (const m of models) await m.train(train, { ...opts, maxSteps: 3 }); // warm-up: data resident, graph captured
  const sequential: number[] = [];
  for (const m of models) {
    const t = performance.now();
    await m.train(train, opts);
    sequential.push((performance.now() - t) / 1000);
  }
  const t0 = performance.now();
  const each = await Promise.all(
    models.map(async (m) => {
      const t = performance.now();
      const r = await m.train(train, opts);
      return { seconds: (performance.now() - t) / 1000, samplesPerSecond: r.samplesPerSecond };
    }),
  );
  const concurrent = (performance.now() - t0) / 1000;
  const seqTotal = sequential.reduce((a, b) => a + b, 0);
  log(`${n} GPU(s) ${info.names.join(', ')}: ${n} x ${o.steps} steps one after another ${seqTotal.toFixed(3)} s, all at once ${concurrent.toFixed(3)} s (${(seqTotal / concurrent).toFixed(2)}x)`);
  return {
    bench: 'multi-gpu',
    model: 'ctr26',
    auto_backend: auto,
    devices: n,
    names: info.names,
    batch: o.batch,
    steps_per_model: o.steps,
    sequential_s: sequential.map((s) => Number(s.toFixed(4))),
    concurrent_s: Number(concurrent.toFixed(4)),
    concurrent_per_model: each.map((e) => ({ seconds: Number(e.seconds.toFixed(4)), samples_per_s: Math.round(e.samplesPerSecond) })),
    speedup: Number((seqTotal / concurrent).toFixed(3)),
    date: new Date().toISOString(),
    command: o.command,
  };
}
