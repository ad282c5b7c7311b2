import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadNativeAddon } from './binding';
import { makeSyntheticCtr, sliceDataset } from './bench/synthetic-ctr';
import { computeMetrics, exactAuc, groupAuc } from './metrics';
import type { ModelSpecInput } from './model-spec.schema';
import { RuntimeModel } from './runtime-model';
import { readSafetensors } from './safetensors';
import { openShards, readShard, readShardSync, writeShard } from './shard-format';

const tmp = () => mkdtempSync(path.join(tmpdir(), 'abacus-rt-'));
const syn = makeSyntheticCtr({ rows: 120_000, numeric: 4, slots: 4, vocab: 200, maxLen: 3, seed: 1, padding: 0.1 });
const train = sliceDataset(syn.dataset, 0, 100_000);
const test = sliceDataset(syn.dataset, 100_000, 120_000);
const spec: ModelSpecInput = {
  numeric: ['num0', 'num1', 'num2', 'num3'],
  slots: [0, 1, 2, 3].map((s) => ({ name: `slot${s}`, vocab: 200 })),
  embeddingDim: 8,
  hidden: [32, 16],
  optimizer: { sparse: { kind: 'adam', lr: 0.01 }, dense: { lr: 3e-3 } },
  seed: 2,
};

describe('RuntimeModel (cpu backend)', () => {
  it('reaches the planted-logit AUC upper bound (within 0.005) when the model can represent it', async () => {
    // single-id slots: the planted signal reads the first id, which a pooled bag of several ids hides
    const one = makeSyntheticCtr({ rows: 120_000, numeric: 4, slots: 4, vocab: 200, maxLen: 1, seed: 3 });
    const upper = exactAuc(one.trueLogit.subarray(100_000), one.dataset.labels.subarray(100_000));
    const m = RuntimeModel.create({ ...spec, optimizer: { sparse: { kind: 'adagrad', lr: 0.05 }, dense: { lr: 1e-3 } } }, { backend: 'auto', threads: 2 });
    expect(m.backend).toBe('cpu');
    await m.train(sliceDataset(one.dataset, 0, 100_000), { epochs: 10, batchSize: 256, seed: 1, validationFraction: 0.1, earlyStopping: { patience: 2, monitor: 'logloss' } });
    const ev = await m.evaluate(sliceDataset(one.dataset, 100_000, 120_000));
    expect(ev.auc).toBeGreaterThan(upper - 0.005);
  });

  it('is deterministic for a seed and thread count; progress, early stopping and cancel work off the event loop', async () => {
    const a = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
    const b = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const seen: number[] = [];
    const ra = await a.train(train, { epochs: 6, batchSize: 128, validationFraction: 0.2, earlyStopping: { patience: 1, minDelta: 0.5 }, progressEvery: 100 }, { onProgress: (p) => seen.push(p.step) });
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(5); // the event loop kept running during training
    expect(ra.stoppedEarly).toBe(true); // minDelta 0.5 can never be met: stops after patience
    expect(ra.epochs).toBe(2);
    expect(ra.validationRows).toBe(20_000);
    expect(seen.length).toBeGreaterThan(3);
    await b.train(train, { epochs: 6, batchSize: 128, validationFraction: 0.2, earlyStopping: { patience: 1, minDelta: 0.5 }, progressEvery: 100 });
    for (const [i, t] of a.tensors().entries()) expect(Buffer.compare(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength), Buffer.from(b.tensors()[i]!.data.buffer, b.tensors()[i]!.data.byteOffset, b.tensors()[i]!.data.byteLength))).toBe(0);
    // cancel
    const c = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
    const ctl = new AbortController();
    const rc = await c.train(train, { epochs: 50, batchSize: 64, progressEvery: 10 }, { signal: ctl.signal, onProgress: (p) => p.step >= 50 && ctl.abort() });
    expect(rc.cancelled).toBe(true);
    expect(rc.steps).toBeLessThan(50 * Math.ceil(100_000 / 64));
    await expect(c.train(train, {}, { signal: ctl.signal })).rejects.toThrow(/aborted/);
  });

  it('shards: written natively, read back by JS and native, checksums enforced, training streams from them', async () => {
    const dir = tmp();
    const withKeys = { ...train, keys: { user: Int32Array.from({ length: train.rows }, (_, i) => i % 50) }, weights: new Float32Array(train.rows).fill(1) };
    const half = sliceDataset(withKeys, 0, 50_000), rest = sliceDataset(withKeys, 50_000, 100_000);
    await writeShard(path.join(dir, 'a.shard'), half);
    await writeShard(path.join(dir, 'b.shard'), rest);
    const back = readShardSync(path.join(dir, 'a.shard'));
    expect(back.rows).toBe(50_000);
    expect(Buffer.compare(Buffer.from(back.slots[2]!.ids.buffer), Buffer.from(half.slots[2]!.ids.buffer))).toBe(0);
    expect(back.keys!['user']!.slice(0, 5)).toEqual(half.keys!['user']!.slice(0, 5));
    const shards = await openShards([path.join(dir, 'a.shard'), path.join(dir, 'b.shard')]);
    expect(shards.rows).toBe(100_000);
    // same training from memory and from the shards: identical weights
    const m1 = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
    const m2 = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
    await m1.train(withKeys, { epochs: 1, batchSize: 512 });
    await m2.train(shards, { epochs: 1, batchSize: 512 });
    expect(Array.from(m2.tensors()[2]!.data.subarray(0, 64))).toEqual(Array.from(m1.tensors()[2]!.data.subarray(0, 64)));
    const e1 = await m1.evaluate(withKeys, { groupKey: 'user' }), e2 = await m2.evaluate(shards, { groupKey: 'user' });
    expect(e2.auc).toBe(e1.auc);
    expect(e2.groupAuc!.value).toBe(e1.groupAuc!.value);
    expect(e2.groupAuc!.groups).toBe(50);
    // a flipped byte in a section is caught, natively and in JS
    const bad = path.join(dir, 'bad.shard');
    const bytes = readFileSync(path.join(dir, 'a.shard'));
    bytes[bytes.length - 3] ^= 0xff;
    writeFileSync(bad, bytes);
    await expect(openShards([bad])).rejects.toThrow(/checksum mismatch/);
    expect(() => readShardSync(bad)).toThrow(/checksum mismatch/);
    // the asynchronous reader (large splits): the same dataset, the same checks
    const again = await readShard(path.join(dir, 'a.shard'));
    expect(again).toEqual(back);
    expect(again.weights).toEqual(half.weights);
    await expect(readShard(bad)).rejects.toThrow(/checksum mismatch/);
    const notShard = path.join(dir, 'not.shard');
    writeFileSync(notShard, 'hello');
    await expect(readShard(notShard)).rejects.toThrow(/not an Abacus shard/);
  });

  it('checkpoints: safetensors + model.json round trip, continue training, transfer with frozen slots', async () => {
    const dir = tmp();
    const m = RuntimeModel.create({ ...spec, wide: true }, { backend: 'cpu', threads: 2 });
    await m.train(train, { epochs: 1, batchSize: 512 });
    await m.save(dir);
    const st = await readSafetensors(path.join(dir, 'model.safetensors'));
    expect(st.tensors.get('embedding.slot1')!.shape).toEqual([200, 8]);
    expect(st.tensors.get('mlp.0.weight')!.shape).toEqual([32, 4 + 4 * 8]); // PyTorch [out, in]
    const loaded = await RuntimeModel.load(dir, { threads: 2 });
    expect(loaded.step).toBe(m.step);
    expect(Array.from(await loaded.predict(test))).toEqual(Array.from(await m.predict(test)));
    // continuing from the checkpoint equals continuing the original
    await m.train(train, { epochs: 1, batchSize: 512, seed: 4 });
    await loaded.train(train, { epochs: 1, batchSize: 512, seed: 4 });
    expect(Array.from(await loaded.predict(test))).toEqual(Array.from(await m.predict(test)));
    // transfer: another model with slot0 / slot1 (+ a new slot) starts from the checkpoint's rows
    const other = RuntimeModel.create({ ...spec, slots: [{ name: 'slot0', vocab: 300 }, { name: 'slot1', vocab: 100 }, { name: 'new', vocab: 10 }], numeric: ['num0'] }, { backend: 'cpu', threads: 2 });
    const tr = await other.initFrom(dir, { freeze: true });
    expect(tr.copied).toEqual([{ slot: 'slot0', rows: 200 }, { slot: 'slot1', rows: 100 }]);
    const table = () => other.tensors().find((t) => t.name === 'embedding.table')!.data.slice();
    const src = st.tensors.get('embedding.slot1')!.data;
    expect(Array.from(table().subarray(300 * 8, 300 * 8 + 16))).toEqual(Array.from(src.subarray(0, 16)));
    const before = table();
    const d2 = { ...train, slots: [train.slots[0]!, { ...train.slots[1]!, ids: train.slots[1]!.ids.map((x) => x % 100) }, { name: 'new', ids: train.slots[2]!.ids.map((x) => (x < 0 ? x : x % 10)), offsets: train.slots[2]!.offsets }] };
    await other.train(d2, { epochs: 1, batchSize: 1024 });
    const after = table();
    expect(Array.from(after.subarray(0, 400 * 8))).toEqual(Array.from(before.subarray(0, 400 * 8))); // frozen
    expect(after.subarray(400 * 8).some((x, i) => x !== before[400 * 8 + i])).toBe(true); // the new slot trained
  });

  it('reports clear errors: cuda not built, addon missing, bad spec, ids outside the vocabulary', async () => {
    // names why (addon not built, or no GPU) and the way out
    expect(() => RuntimeModel.create(spec, { backend: 'cuda' })).toThrow(/CUDA backend not available: .+\(use backend "cpu" or "auto"\)/);
    expect(() => loadNativeAddon('/nonexistent/abacus_runtime.node')).toThrow(/npm run build:native.*scripts\/build-native\.sh/);
    expect(() => RuntimeModel.create({ ...spec, embeddingDim: 0 })).toThrow();
    expect(() => RuntimeModel.create({ ...spec, slots: [{ name: 'num0', vocab: 3 }] })).toThrow(/duplicate/);
    const m = RuntimeModel.create({ ...spec, slots: [{ name: 'slot0', vocab: 10 }] }, { backend: 'cpu', threads: 1 });
    await expect(m.train(train, { maxSteps: 1 })).rejects.toThrow(/outside its vocabulary/);
    await expect(m.ablate(test, { groups: [['nope']] })).rejects.toThrow(/not an input/);
  });

  it("init 'torch' draws PyTorch's defaults (EmbeddingBag N(0,1), Linear U(±1/sqrt(fan_in)) with bias); 'default' is unchanged", () => {
    const base: ModelSpecInput = { numeric: ['a', 'b'], slots: [{ name: 's', vocab: 5000 }], embeddingDim: 8, hidden: [64, 32], seed: 4 };
    for (const backend of ['cpu', 'tfjs'] as const) {
      const t = Object.fromEntries(RuntimeModel.create({ ...base, init: 'torch' }, { backend, threads: 2 }).tensors().map((x) => [x.name, x.data]));
      const e = t['embedding.table']!;
      const mean = e.reduce((a, v) => a + v, 0) / e.length;
      const sd = Math.sqrt(e.reduce((a, v) => a + (v - mean) ** 2, 0) / e.length);
      expect(Math.abs(mean)).toBeLessThan(0.02);
      expect(Math.abs(sd - 1)).toBeLessThan(0.02);
      for (const [l, fanIn] of [[0, 10], [1, 64], [2, 32]] as const) {
        const w = t[`mlp.${l}.weight`]!, b = t[`mlp.${l}.bias`]!, bound = 1 / Math.sqrt(fanIn);
        expect(Math.max(...w.map(Math.abs))).toBeLessThanOrEqual(bound);
        expect(Math.max(...w.map(Math.abs))).toBeGreaterThan(0.9 * bound);
        expect(Math.max(...b.map(Math.abs))).toBeLessThanOrEqual(bound);
        expect(b.some((v) => v !== 0)).toBe(true);
      }
      const d = Object.fromEntries(RuntimeModel.create(base, { backend, threads: 2 }).tensors().map((x) => [x.name, x.data]));
      expect(Math.max(...d['embedding.table']!.map(Math.abs))).toBeLessThanOrEqual(0.05);
      expect(d['mlp.0.bias']!.every((v) => v === 0)).toBe(true);
    }
  });

  it('evaluate({ offThread }): the metrics computed on the addon thread are this thread\'s: the same AUC, bit for bit, with ties, weights and one class', async () => {
    // a trained model; one whose only input is a 3-id slot (3 distinct predictions: ties everywhere);
    // weighted rows; a split with one class (AUC NaN both ways)
    const trained = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
    await trained.train(train, { epochs: 1, batchSize: 512, seed: 4 });
    const few = makeSyntheticCtr({ rows: 6_000, numeric: 0, slots: 1, vocab: 3, maxLen: 1, seed: 8 });
    const tied = RuntimeModel.create({ slots: [{ name: 'slot0', vocab: 3 }], embeddingDim: 4, hidden: [8], seed: 3 }, { backend: 'cpu', threads: 2 });
    await tied.train(few.dataset, { epochs: 1, batchSize: 256, seed: 1 });
    const weighted = { ...test, weights: Float32Array.from({ length: test.rows }, (_, i) => 0.5 + (i % 7) / 3) };
    const oneClass = { ...test, labels: new Float32Array(test.rows) };
    for (const [model, data] of [
      [trained, test],
      [trained, weighted],
      [tied, few.dataset],
      [trained, oneClass],
    ] as const) {
      const here = await model.evaluate(data);
      const there = await model.evaluate(data, { offThread: true });
      expect(there.rows).toBe(here.rows);
      expect(Object.is(there.auc, here.auc)).toBe(true);
      for (const k of ['logloss', 'calibration', 'meanPrediction', 'meanLabel'] as const) {
        if (Number.isNaN(here[k])) expect(there[k]).toBeNaN();
        else expect(Math.abs(there[k] - here[k])).toBeLessThanOrEqual(1e-12 * Math.abs(here[k]));
      }
    }
    const ties = new Set(await tied.predict(few.dataset));
    expect(ties.size).toBeLessThanOrEqual(3);
    expect(Number.isNaN((await trained.evaluate(oneClass, { offThread: true })).auc)).toBe(true);
  });

  it('metrics: exact AUC with ties, group AUC, calibration', () => {
    const p = Float32Array.from([0.1, 0.4, 0.4, 0.8, 0.4, 0.2]), y = Float32Array.from([0, 1, 0, 1, 1, 0]);
    // brute force over all positive/negative pairs
    let w = 0;
    for (let i = 0; i < 6; i++) for (let j = 0; j < 6; j++) if (y[i] === 1 && y[j] === 0) w += p[i]! > p[j]! ? 1 : p[i] === p[j] ? 0.5 : 0;
    expect(exactAuc(p, y)).toBeCloseTo(w / 9, 12);
    const m = computeMetrics(p, y);
    expect(m.calibration).toBeCloseTo((p.reduce((a, b) => a + b, 0) / 6) / 0.5, 6);
    const g = groupAuc(p, y, Int32Array.from([0, 0, 0, 1, 1, 1]));
    expect(g.groups).toBe(2);
    expect(g.value).toBeCloseTo((exactAuc(p.subarray(0, 3), y.subarray(0, 3)) + exactAuc(p.subarray(3), y.subarray(3))) / 2, 12);
  });
});

describe('RuntimeModel (tfjs backend)', () => {
  it('trains, evaluates and ablates through @tensorflow/tfjs, says so, and agrees with cpu on the same weights', async () => {
    const cpu = RuntimeModel.create({ ...spec, hidden: [16] }, { backend: 'cpu', threads: 2 });
    await cpu.train(train, { epochs: 1, batchSize: 256 });
    const m = RuntimeModel.create({ ...spec, hidden: [16] }, { backend: 'tfjs' });
    m.copyWeightsFrom(cpu);
    const small = sliceDataset(test, 0, 1000);
    const [ev, evCpu] = [await m.evaluate(small), await cpu.evaluate(small)];
    expect(ev.backend).toBe('tfjs');
    expect(Math.abs(ev.auc - evCpu.auc)).toBeLessThan(1e-4);
    expect(Math.abs(ev.logloss - evCpu.logloss)).toBeLessThan(1e-4);
    const ab = await m.ablate(small, { groups: [['num0']], repeats: 1, batchSize: 1000 });
    expect(ab.backend).toBe('tfjs');
    expect(ab.groups[0]!.auc.mean).toBeLessThan(-0.01); // num0 carries planted signal
    const r = await m.train(sliceDataset(train, 0, 1000), { epochs: 1, batchSize: 500 });
    expect(r.backend).toBe('tfjs');
    expect(r.steps).toBe(2);
  });
});

describe('train({ evaluateFirst }): an epoch ended before the call is the one to beat', () => {
  for (const backend of ['cpu', 'tfjs'] as const) {
    it(`${backend}: a call whose epochs all do worse keeps the weights it started from; one that does better stops on its own epochs`, async () => {
      const small = { ...spec, hidden: [16] };
      const fit = sliceDataset(train, 0, backend === 'tfjs' ? 3000 : 20_000);
      const held = sliceDataset(test, 0, backend === 'tfjs' ? 1000 : 5000);
      const m = RuntimeModel.create(small, { backend, threads: 2 });
      await m.train(fit, { epochs: 1, batchSize: 256, seed: 1 });
      const before = await m.predict(held);
      const first = (await m.evaluate(held)).auc;
      // a learning rate that wrecks the model: no epoch of this call beats the one before it
      const wreck = RuntimeModel.create({ ...small, optimizer: { sparse: { kind: 'adam', lr: 5 }, dense: { lr: 5 } } }, { backend, threads: 2 });
      wreck.copyWeightsFrom(m);
      const r = await wreck.train(fit, { epochs: 2, batchSize: 256, seed: 2, earlyStopping: { patience: 2 }, evaluateFirst: true }, { validationData: held });
      // (evaluate may take the bf16 forward where training's validation pass does not: close, not equal)
      expect(r.initialValAuc).toBeCloseTo(first, 3);
      expect(r.bestEpoch).toBe(-1);
      expect(r.epochs).toBe(2);
      expect(Array.from(await wreck.predict(held))).toEqual(Array.from(before));
      // without evaluateFirst the best of its own epochs is kept instead
      const again = RuntimeModel.create({ ...small, optimizer: { sparse: { kind: 'adam', lr: 5 }, dense: { lr: 5 } } }, { backend, threads: 2 });
      again.copyWeightsFrom(m);
      const r2 = await again.train(fit, { epochs: 2, batchSize: 256, seed: 2, earlyStopping: { patience: 2 } }, { validationData: held });
      expect(r2.bestEpoch).toBeGreaterThanOrEqual(0);
      expect(r2.initialValAuc).toBeUndefined();
      expect(Array.from(await again.predict(held))).not.toEqual(Array.from(before));
    }, 60_000);
  }
});

