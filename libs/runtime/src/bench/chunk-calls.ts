import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { RuntimeData } from '../dataset.types';
import { shardRanges, sliceRows } from '../dataset-views';
import type { BackendKind } from '../model-spec.schema';
import { RuntimeModel } from '../runtime-model';
import { openShards, writeShard } from '../shard-format';
import { makeSyntheticCtr, sliceDataset } from './synthetic-ctr';

export interface ChunkCallsOptions {
  backend: BackendKind;
  /** fitted rows */
  rows: number;
  numeric: number;
  slots: number;
  /** rows per shard file (a built set's range) */
  shardRows: number;
  /** rows per first-epoch chunk (an in-order first epoch's train call) */
  chunkRows: number;
  batch: number;
}

/**
 * What an in-order first epoch costs in train calls: one epoch over the rows as one call against the
 * same epoch as one call per chunk (training.firstEpoch 'inOrder'), from shard files and from memory,
 * each call's setup and step time, on one backend.
 */
export async function runChunkCalls(o: ChunkCallsOptions, log: (s: string) => void): Promise<Record<string, unknown>> {
  const syn = makeSyntheticCtr({ rows: o.rows, numeric: o.numeric, slots: o.slots, vocab: 2000, maxLen: 2, seed: 3 });
  const spec = {
    numeric: Array.from({ length: o.numeric }, (_, j) => `num${j}`),
    slots: Array.from({ length: o.slots }, (_, s) => ({ name: `slot${s}`, vocab: 2000 })),
    pooling: 'mean' as const,
    embeddingDim: 8,
    wide: true,
    hidden: [64, 32],
    optimizer: { dense: { kind: 'adam' as const, lr: 1e-3 }, sparse: { kind: 'adam' as const, lr: 0.01 } },
    seed: 1,
  };
  const dir = mkdtempSync(path.join(tmpdir(), 'abacus-chunk-calls-'));
  try {
    const files: string[] = [];
    for (let a = 0, k = 0; a < o.rows; a += o.shardRows, k++) {
      const f = path.join(dir, `${String(k).padStart(6, '0')}.shard`);
      await writeShard(f, sliceDataset(syn.dataset, a, Math.min(o.rows, a + o.shardRows)));
      files.push(f);
    }
    const shards = await openShards(files);
    const out: Record<string, unknown> = { options: o };
    for (const [where, data] of [
      ['shards', shards],
      ['memory', syn.dataset],
    ] as [string, RuntimeData][]) {
      // one call over every row (a model trained once before, so both start warm)
      const warm = RuntimeModel.create(spec, { backend: o.backend });
      await warm.train(sliceRows(data, 0, Math.min(o.rows, 4 * o.batch)), { epochs: 1, batchSize: o.batch, seed: 9 });
      const one = RuntimeModel.create(spec, { backend: o.backend });
      const t0 = performance.now();
      const r = await one.train(data, { epochs: 1, batchSize: o.batch, seed: 1 });
      const oneMs = performance.now() - t0;
      // the same rows as one call per chunk
      const chunked = RuntimeModel.create(spec, { backend: o.backend });
      const calls: { rows: number; wallMs: number; setupMs: number; queuedMs: number; stepsMs: number }[] = [];
      const t1 = performance.now();
      for (let a = 0, c = 0; a < o.rows; a += o.chunkRows, c++) {
        const view = sliceRows(data, a, Math.min(o.rows, a + o.chunkRows));
        const tc = performance.now();
        const rc = await chunked.train(view, { epochs: 1, batchSize: o.batch, seed: 100 + c });
        calls.push({
          rows: view.rows,
          wallMs: Math.round(performance.now() - tc),
          setupMs: Math.round((rc.setupSeconds ?? 0) * 1000),
          queuedMs: Math.round((rc.queuedSeconds ?? 0) * 1000),
          stepsMs: Math.round((rc.seconds - (rc.evalSeconds ?? 0)) * 1000),
        });
      }
      const chunkedMs = performance.now() - t1;
      // one call over the rows less every tenth block of 256 (an in-order fit's holdout blocks): a view of many parts
      let pieces: { wallMs: number; parts: number } | null = null;
      if (where === 'shards') {
        const ranges: [number, number][] = [];
        for (let b = 0, a = 0; a < o.rows; a += 256, b++) if (b % 10 !== 9) ranges.push([a, Math.min(o.rows, a + 256)]);
        const view = shardRanges(shards, ranges);
        const m = RuntimeModel.create(spec, { backend: o.backend });
        const t2 = performance.now();
        await m.train(view, { epochs: 1, batchSize: o.batch, seed: 1 });
        pieces = { wallMs: Math.round(performance.now() - t2), parts: view.shards.length };
      }
      out[where] = {
        ...(pieces ? { blocks: pieces } : {}),
        oneCall: { wallMs: Math.round(oneMs), setupMs: Math.round((r.setupSeconds ?? 0) * 1000), steps: r.steps },
        chunked: { wallMs: Math.round(chunkedMs), calls },
      };
      log(`${where}: one call ${Math.round(oneMs)} ms, ${calls.length} chunk calls ${Math.round(chunkedMs)} ms (setup ${calls.map((x) => x.setupMs).join('/')} ms)`);
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
