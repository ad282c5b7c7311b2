import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { readPeerData } from './peer-data';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** Writes a peer data set the way peer_data.py does: lens u8 [n x S], ids i32 [n x S x M], dense f32 [n x N], y f32 [n]. */
function writePeer(n: number, S: number, N: number, M: number, lens: number[], ids: number[]) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-peer-'));
  dirs.push(dir);
  fs.writeFileSync(path.join(dir, 'lens.u8'), Buffer.from(Uint8Array.from(lens)));
  fs.writeFileSync(path.join(dir, 'ids.i32'), Buffer.from(Int32Array.from(ids).buffer));
  fs.writeFileSync(path.join(dir, 'dense.f32'), Buffer.from(Float32Array.from({ length: n * N }, (_, i) => i / 10).buffer));
  fs.writeFileSync(path.join(dir, 'y.f32'), Buffer.from(Float32Array.from({ length: n }, (_, i) => i % 2).buffer));
  const meta = { rows: n, batch: 2, batches: n / 2, slots: S, numeric: N, vocab: 100, max_len: M, train_rows: 2, test_planted_logit_auc: 0.5, torch: 'test' };
  fs.writeFileSync(path.join(dir, 'meta.json'), JSON.stringify(meta));
  return dir;
}

describe('readPeerData', () => {
  it('builds per-slot CSR columns from the padded [n x S x max_len] ids and the bag lengths', () => {
    // 3 rows, 2 slots, 1 numeric, max_len 3; row-major (row, slot, k)
    const lens = [1, 3, 2, 1, 3, 2];
    const ids = [5, 0, 0, 7, 8, 9, 1, 2, 0, 4, 0, 0, 11, 12, 13, 20, 21, 0];
    const { dataset, meta } = readPeerData(writePeer(3, 2, 1, 3, lens, ids));
    expect(meta.rows).toBe(3);
    expect(dataset.rows).toBe(3);
    expect(Array.from(dataset.slots[0]!.offsets)).toEqual([0, 1, 3, 6]);
    expect(Array.from(dataset.slots[0]!.ids)).toEqual([5, 1, 2, 11, 12, 13]);
    expect(Array.from(dataset.slots[1]!.offsets)).toEqual([0, 3, 4, 6]);
    expect(Array.from(dataset.slots[1]!.ids)).toEqual([7, 8, 9, 4, 20, 21]);
    expect(Array.from(dataset.labels)).toEqual([0, 1, 0]);
    expect(dataset.numeric[2]).toBeCloseTo(0.2, 6);
  });

  it('names the missing file and how to write it, and a file of the wrong size', () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-peer-'));
    dirs.push(empty);
    expect(() => readPeerData(empty)).toThrow(/no meta\.json.*peer_data\.py/);
    const dir = writePeer(2, 1, 1, 2, [1, 2], [3, 0, 4, 5]);
    fs.writeFileSync(path.join(dir, 'y.f32'), Buffer.alloc(4));
    expect(() => readPeerData(dir)).toThrow('y.f32 has 4 bytes, expected 8');
  });
});
