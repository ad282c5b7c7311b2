import fs from 'node:fs';
import path from 'node:path';

import type { ColumnarDataset } from '../dataset.types';

export interface PeerDataMeta {
  rows: number;
  batch: number;
  batches: number;
  slots: number;
  numeric: number;
  vocab: number;
  max_len: number;
  train_rows: number;
  test_planted_logit_auc: number;
  torch: string;
}

/**
 * Reads the PyTorch peer's own data set as written by libs/runtime/bench/peer_data.py (same seed and
 * calls as shared/bench/torch_ctr_baseline.py), so both sides train and test on identical rows.
 */
export function readPeerData(dir: string): { dataset: ColumnarDataset; meta: PeerDataMeta } {
  const metaFile = path.join(dir, 'meta.json');
  if (!fs.existsSync(metaFile)) throw new Error(`--data ${dir}: no meta.json (write it with: python3 libs/runtime/bench/peer_data.py ${dir})`);
  const meta = JSON.parse(fs.readFileSync(metaFile, 'utf8')) as PeerDataMeta;
  const { rows: n, slots: S, numeric: N, max_len: M } = meta;
  const raw = (f: string, bytes: number) => {
    const b = fs.readFileSync(path.join(dir, f));
    if (b.byteLength !== bytes) throw new Error(`--data ${dir}: ${f} has ${b.byteLength} bytes, expected ${bytes}`);
    return b;
  };
  const lensB = raw('lens.u8', n * S);
  const idsB = raw('ids.i32', n * S * M * 4);
  const denseB = raw('dense.f32', n * N * 4);
  const yB = raw('y.f32', n * 4);
  const lens = new Uint8Array(lensB.buffer, lensB.byteOffset, n * S);
  const ids = new Int32Array(idsB.buffer.slice(idsB.byteOffset, idsB.byteOffset + idsB.byteLength));
  const numeric = new Float32Array(denseB.buffer.slice(denseB.byteOffset, denseB.byteOffset + denseB.byteLength));
  const labels = new Float32Array(yB.buffer.slice(yB.byteOffset, yB.byteOffset + yB.byteLength));
  const slots = Array.from({ length: S }, (_, s) => {
    const offsets = new Int32Array(n + 1);
    let nnz = 0;
    for (let i = 0; i < n; i++) {
      nnz += lens[i * S + s]!;
      offsets[i + 1] = nnz;
    }
    const out = new Int32Array(nnz);
    for (let i = 0; i < n; i++) {
      const l = lens[i * S + s]!, src = (i * S + s) * M, o = offsets[i]!;
      for (let k = 0; k < l; k++) out[o + k] = ids[src + k]!;
    }
    return { name: `slot${s}`, ids: out, offsets };
  });
  return {
    dataset: { rows: n, numericNames: Array.from({ length: N }, (_, j) => `num${j}`), numeric, slots, labels },
    meta,
  };
}
