import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { asShards as writeShards } from '../../../test/support/shards';
import { afterAll, describe, expect, it } from 'vitest';
import { makeSyntheticCtr, sliceDataset } from './bench/synthetic-ctr';
import { concatRows, labelsOf, materialize, sliceRows } from './dataset-views';
import type { ColumnarDataset, RuntimeData } from './dataset.types';
import type { ModelSpecInput } from './model-spec.schema';
import { RuntimeModel } from './runtime-model';

const dir = mkdtempSync(path.join(tmpdir(), 'abacus-views-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const spec: ModelSpecInput = {
  numeric: ['num0', 'num1', 'num2'],
  slots: [0, 1, 2].map((s) => ({ name: `slot${s}`, vocab: 300 })),
  embeddingDim: 8,
  hidden: [16],
  optimizer: { sparse: { kind: 'adam', lr: 0.01 }, dense: { lr: 3e-3 } },
  seed: 4,
};

const plain = (d: ColumnarDataset) => ({
  rows: d.rows,
  numericNames: d.numericNames,
  numeric: Array.from(d.numeric),
  labels: Array.from(d.labels),
  slots: d.slots.map((s) => ({
    name: s.name,
    ids: Array.from(s.ids.subarray(0, s.offsets[d.rows])),
    offsets: Array.from(s.offsets),
  })),
  keys: d.keys ? Object.fromEntries(Object.entries(d.keys).map(([k, v]) => [k, Array.from(v)])) : undefined,
});

const asShards = (d: ColumnarDataset, sizes: number[], tag: string) => writeShards(dir, d, sizes, tag);

describe('row views of shard data', () => {
  const syn = makeSyntheticCtr({ rows: 3_000, numeric: 3, slots: 3, vocab: 300, maxLen: 3, seed: 5, padding: 0.1 });
  const mem: ColumnarDataset = { ...syn.dataset, keys: { user: Int32Array.from({ length: 3_000 }, (_, i) => (i * 7) % 97) } };

  it('slices, concatenates and gathers the same rows as in memory, ranges crossing shard boundaries', async () => {
    const sh = await asShards(mem, [700, 1300, 1000], 'v');
    for (const [from, to] of [
      [0, 3000],
      [650, 2100],
      [700, 2000],
      [2999, 3000],
      [1200, 1200],
    ] as const) {
      const view = sliceRows(sh, from, to);
      expect(view.rows).toBe(to - from);
      expect(plain(await materialize(view))).toEqual(plain(sliceRows(mem, from, to)));
    }
    const both = concatRows(sliceRows(sh, 0, 500), sliceRows(sh, 2500, 3000));
    expect(plain(await materialize(both))).toEqual(plain(concatRows(sliceRows(mem, 0, 500), sliceRows(mem, 2500, 3000))));
    const idx = [2999, 0, 5, 5, 1500, 701, 699];
    expect(plain(await materialize(sliceRows(sh, 0, 3000), idx))).toEqual(plain(await materialize(mem, idx)));
    expect(Array.from(await labelsOf(sliceRows(sh, 100, 900)))).toEqual(Array.from(mem.labels.subarray(100, 900)));
    await expect(materialize(sh, [3000])).rejects.toThrow(/outside/);
    expect(() => sliceRows(sh, 10, 3001)).toThrow(/not a range/);
  });

  it('gathers chosen rows of shards exactly as in memory: any order, repeats, near and far rows, weights, keys, views starting inside a shard', async () => {
    const weighted: ColumnarDataset = { ...mem, weights: Float32Array.from({ length: 3_000 }, (_, i) => 0.5 + (i % 13) / 7) };
    const sh = await asShards(weighted, [700, 1300, 1000], 'g');
    const view = sliceRows(sh, 350, 2900);
    const inMem = sliceRows(weighted, 350, 2900);
    const plainW = (d: ColumnarDataset) => ({ ...plain(d), weights: Array.from(d.weights ?? []) });
    for (const seed of [1, 2, 3, 4, 5]) {
      let x = seed * 2654435761;
      const rnd = (n: number) => {
        x = (Math.imul(x, 1103515245) + 12345) >>> 0;
        return x % n;
      };
      // dense picks (gaps below the span merge of 512 rows), sparse ones (gaps above it), repeats
      const dense = Array.from({ length: 1_500 }, () => rnd(view.rows));
      const sparse = [0, 600, 1300, 2549, 2549, 1900, 5];
      for (const idx of [dense, sparse, [...sparse, ...dense.slice(0, 40)]]) {
        expect(plainW(await materialize(view, idx))).toEqual(plainW(await materialize(inMem, idx)));
      }
    }
  });

  it('trains a view of shards with per-row weights given beside it exactly as the same rows and weights in memory', async () => {
    const sh = await asShards(mem, [1000, 1000, 1000], 'wt');
    const w = Float32Array.from({ length: 3_000 }, (_, i) => 0.25 + (i % 7) / 3);
    const memW: ColumnarDataset = { ...sliceRows(mem, 300, 2600), weights: w.slice(300, 2600) };
    const shW = { ...sliceRows(sh, 300, 2600), weights: w.slice(300, 2600) };
    // slices and concatenations keep the weights with their rows; a gather copies them
    expect(Array.from((await materialize(sliceRows(shW, 100, 200))).weights!)).toEqual(Array.from(w.subarray(400, 500)));
    const both = concatRows(sliceRows(shW, 0, 10), sliceRows(shW, 1500, 1510));
    expect(Array.from((await materialize(both)).weights!)).toEqual([...w.subarray(300, 310), ...w.subarray(1800, 1810)]);
    expect(() => concatRows(sliceRows(shW, 0, 10), sliceRows(sh, 0, 10))).toThrow(/weights on one side only/);
    const trained = async (d: RuntimeData) => {
      const m = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
      await m.train(d, { epochs: 2, batchSize: 128, seed: 3 });
      return Array.from(m.tensors()[2]!.data.subarray(0, 32));
    };
    const fromMem = await trained(memW);
    expect(await trained(shW)).toEqual(fromMem);
    // and the weights count: without them the same rows train to another model
    expect(await trained(sliceRows(sh, 300, 2600))).not.toEqual(fromMem);
  });

  it('trains on a view of shards exactly as on the same rows in memory (up to one window of rows)', async () => {
    const sh = await asShards(mem, [1000, 1000, 1000], 't');
    const m1 = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
    const m2 = RuntimeModel.create(spec, { backend: 'cpu', threads: 2 });
    await m1.train(sliceRows(mem, 300, 2600), { epochs: 2, batchSize: 128, seed: 3 });
    await m2.train(sliceRows(sh, 300, 2600), { epochs: 2, batchSize: 128, seed: 3 });
    expect(Array.from(m2.tensors()[2]!.data.subarray(0, 32))).toEqual(Array.from(m1.tensors()[2]!.data.subarray(0, 32)));
    const e1 = await m1.evaluate(sliceRows(mem, 2600, 3000));
    const e2 = await m2.evaluate(sliceRows(sh, 2600, 3000));
    expect(e2.auc).toBe(e1.auc);
  });
});

describe('training from shards larger than a window', () => {
  it('takes the rows a window at a time, reaches the in-memory AUC within seed noise, and sees every row each epoch', async () => {
    // 700k training rows: more than one window (2^19), so the windowed shuffle is used
    const syn = makeSyntheticCtr({ rows: 800_000, numeric: 3, slots: 3, vocab: 300, maxLen: 1, seed: 9 });
    const train = sliceDataset(syn.dataset, 0, 700_000);
    const test = sliceDataset(syn.dataset, 700_000, 800_000);
    const sh = await asShards(train, [250_000, 250_000, 200_000], 'w');
    const aucs: { mem: number; shards: number }[] = [];
    for (const seed of [1, 2]) {
      const m1 = RuntimeModel.create({ ...spec, seed }, { backend: 'cpu', threads: 2 });
      const m2 = RuntimeModel.create({ ...spec, seed }, { backend: 'cpu', threads: 2 });
      const r1 = await m1.train(train, { epochs: 1, batchSize: 1024, seed });
      const r2 = await m2.train(sh, { epochs: 1, batchSize: 1024, seed });
      expect(r2.samples).toBe(r1.samples);
      aucs.push({ mem: (await m1.evaluate(test)).auc, shards: (await m2.evaluate(test)).auc });
    }
    for (const a of aucs) expect(Math.abs(a.shards - a.mem)).toBeLessThan(0.005);
  }, 120_000);
});
