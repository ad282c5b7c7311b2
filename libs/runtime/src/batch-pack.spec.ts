import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { asShards as writeShards } from '../../../test/support/shards';
import { afterAll, describe, expect, it } from 'vitest';
import { loadNativeAddon } from './binding';
import { makeSyntheticCtr, sliceDataset } from './bench/synthetic-ctr';
import type { ColumnarDataset } from './dataset.types';
import type { ModelSpec } from './model-spec.schema';
import { toNativeData } from './native-data.mapper';

// The CUDA backend's host-streamed steps copy one packed stage a batch. From mapped shards the stage
// is packed from row-major copies of each window of the epoch (records); these tests hold it to the
// bytes packed straight from the columns, which the GPU parity suite checks against training in memory.

const dir = mkdtempSync(path.join(tmpdir(), 'abacus-pack-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const WINDOW = 1 << 19;

const asShards = (d: ColumnarDataset, sizes: number[], tag: string) => writeShards(dir, d, sizes, tag);

describe('packing host-streamed batches from window records and window columns', () => {
  const rows = WINDOW + 90_000; // more than one window: the windowed shuffle, a short last window
  const syn = makeSyntheticCtr({ rows, numeric: 2, slots: 3, vocab: 500, maxLen: 4, seed: 21, padding: 0.2 });
  const data: ColumnarDataset = { ...syn.dataset, weights: Float32Array.from({ length: rows }, (_, i) => 0.25 + (i % 11) / 8) };
  const spec = {
    numeric: ['num1', 'num0'], // the model's numeric order differs from the data's
    slots: [{ name: 'slot2' }, { name: 'slot0' }, { name: 'slot1' }],
  } as unknown as ModelSpec;
  const addon = loadNativeAddon();

  it('gives the same bytes as packing from the columns (records packed on the host or copied raw and unpacked, windows copied by column and gathered): shuffled and in order, batches across windows, rows with gaps, several epochs in one stream', async () => {
    const sh = await asShards(data, [200_001, 300_000, rows - 500_001], 'p');
    const native = toNativeData(spec, sh);
    // every row, and a training split with holes (the validation rows taken out)
    const all = Float64Array.from({ length: rows }, (_, i) => i);
    const holes = all.filter((r) => (r * 2654435761) % 7 !== 3);
    let compared = 0;
    for (const [trainRows, batch, shuffle, epoch, epochs, seed] of [
      [all, 8192, true, 0, 2, 1], // the next epoch's first window copied ahead
      [all, 10_000, true, 1, 1, 2], // batches run across window ends
      [holes, 8192, true, 2, 3, 3],
      [holes, 65_535, false, 0, 1, 4],
    ] as const) {
      const opts = { shuffle, seed, epoch, epochs, batch };
      const cols = addon.packBatches(native, 2, 3, trainRows, { ...opts, records: false });
      const recs = addon.packBatches(native, 2, 3, trainRows, { ...opts, records: true });
      expect(recs.length).toBe(cols.length);
      expect(recs.equals(cols)).toBe(true);
      // the records copied as they are, then unpacked as the device does
      const raw = addon.packBatches(native, 2, 3, trainRows, { ...opts, records: true, raw: true });
      expect(raw.equals(cols)).toBe(true);
      // each window copied column by column (as the device holds it), the batch's rows gathered
      // from where pack_positions says they are in the two windows
      const windows = addon.packBatches(native, 2, 3, trainRows, { ...opts, records: false, columns: true });
      expect(windows.equals(cols)).toBe(true);
      compared += cols.length;
    }
    expect(compared).toBeGreaterThan(100e6);
    // a different epoch is a different order: the comparison can tell orders apart
    const e0 = addon.packBatches(native, 2, 3, all, { shuffle: true, seed: 1, epoch: 0, batch: 8192, records: true });
    const e1 = addon.packBatches(native, 2, 3, all, { shuffle: true, seed: 1, epoch: 1, batch: 8192, records: true });
    expect(e1.length).toBe(e0.length);
    expect(e1.equals(e0)).toBe(false);
  }, 120_000);

  it('packs data in memory the same way too (one window: the whole permutation)', () => {
    const small = sliceDataset(data, 0, 20_000);
    const native = toNativeData(spec, small);
    const trainRows = Float64Array.from({ length: 20_000 }, (_, i) => i).filter((r) => r % 5 !== 0);
    for (const batch of [1, 777, 4096]) {
      const opts = { shuffle: true, seed: 9, epoch: 3, batch };
      const cols = addon.packBatches(native, 2, 3, trainRows, { ...opts, records: false });
      expect(addon.packBatches(native, 2, 3, trainRows, { ...opts, records: true }).equals(cols)).toBe(true);
      expect(addon.packBatches(native, 2, 3, trainRows, { ...opts, records: true, raw: true }).equals(cols)).toBe(true);
      expect(addon.packBatches(native, 2, 3, trainRows, { ...opts, records: false, columns: true }).equals(cols)).toBe(true);
    }
    expect(() =>
      addon.packBatches(native, 2, 3, Float64Array.of(0, 20_000), { shuffle: false, seed: 1, epoch: 0, batch: 4, records: true }),
    ).toThrow(/trainRows: row 20000/);
  });
});
