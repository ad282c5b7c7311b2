import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RuntimeModel } from '@abacus/runtime';
import type { SlotIdSpace } from '@abacus/samples';
import {
  applySharedEmbedding,
  extractSlots,
  mapSlotIds,
  readSharedEmbeddingFile,
  writeSharedEmbeddingFile,
} from './shared-embedding-file';

const dict = (...values: (string | number)[]): SlotIdSpace => ({ kind: 'dictionary', values });

describe('mapSlotIds', () => {
  it('carries dictionary rows by value (string form), OOV to OOV, values the source lacks stay', () => {
    const m = mapSlotIds(dict('a', 'b', 'c', 7), 5, dict('b', 7, 'x', 'c'), 5);
    if ('reason' in m) throw new Error(m.reason);
    // target ids: a=1 b=2 c=3 7=4; source rows: b=1 7=2 x=3 c=4
    expect([...m.targetIds]).toEqual([0, 2, 3, 4]);
    expect([...m.sourceRows]).toEqual([0, 1, 4, 2]);
    const numericVsString = mapSlotIds(dict(12, 13), 3, dict('13'), 2);
    if ('reason' in numericVsString) throw new Error(numericVsString.reason);
    expect([...numericVsString.targetIds]).toEqual([0, 2]);
  });

  it('carries identity and same-bucket ids as they are, up to the smaller table', () => {
    const id = mapSlotIds({ kind: 'identity' }, 10, { kind: 'identity' }, 4);
    if ('reason' in id) throw new Error(id.reason);
    expect([...id.targetIds]).toEqual([0, 1, 2, 3]);
    const h = mapSlotIds({ kind: 'hash', buckets: 8 }, 8, { kind: 'hash', buckets: 8 }, 8);
    if ('reason' in h) throw new Error(h.reason);
    expect(h.targetIds.length).toBe(8);
  });

  it('refuses ids that mean different things, and says why', () => {
    expect(mapSlotIds({ kind: 'hash', buckets: 8 }, 8, { kind: 'hash', buckets: 16 }, 16)).toEqual({
      reason: 'hashed into another number of buckets',
    });
    expect(mapSlotIds(dict('a'), 2, { kind: 'identity' }, 4)).toEqual({
      reason: 'ids are identity in the embedding but dictionary in the model',
    });
    expect(mapSlotIds({ kind: 'buckets', boundaries: [1, 2] }, 3, { kind: 'buckets', boundaries: [1, 3] }, 3)).toEqual({
      reason: 'bucketed with other boundaries',
    });
  });
});

describe('shared embedding files', () => {
  it('round-trip a model’s slots and initialise another model row by row through the values', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-emb-'));
    const D = 4;
    const src = RuntimeModel.create(
      {
        numeric: [],
        slots: [
          { name: 'color', vocab: 4 },
          { name: 'domain', vocab: 3 },
          { name: 'n', vocab: 3 },
        ],
        embeddingDim: D,
        hidden: [4],
        wide: true,
        seed: 1,
      },
      { backend: 'cpu', threads: 1 },
    );
    const spaces: Record<string, SlotIdSpace> = {
      color: dict('blue', 'green', 'red'),
      domain: dict('feed', 'target'),
      n: { kind: 'buckets', boundaries: [0.5, 1] },
    };
    const slots = extractSlots(src, spaces, new Set(['domain']));
    // the domain slot and bucketised numerics are not shared
    expect(slots.map((s) => s.name)).toEqual(['color']);
    const file = path.join(dir, 'e.safetensors');
    const { sha256, bytes } = await writeSharedEmbeddingFile(file, D, slots, { name: 'x' });
    expect(sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(bytes).toBe(fs.statSync(file).size);
    const back = await readSharedEmbeddingFile(file);
    expect(back.dim).toBe(D);
    expect([...back.slots.get('color')!.emb]).toEqual([...slots[0].emb]);
    expect(back.slots.get('color')!.idSpace).toEqual(spaces.color);

    // the target knows red and blue (in another order) and purple, which the embedding lacks
    const dst = RuntimeModel.create(
      { numeric: [], slots: [{ name: 'color', vocab: 4 }], embeddingDim: D, hidden: [4], wide: true, seed: 2 },
      { backend: 'cpu', threads: 1 },
    );
    const before = Float32Array.from(dst.tensors().find((t) => t.name === 'embedding.table')!.data);
    const report = await applySharedEmbedding(dst, { color: dict('blue', 'purple', 'red') }, file, true);
    expect(report).toEqual([{ slot: 'color', copied: 3, of: 4 }]);
    const table = dst.tensors().find((t) => t.name === 'embedding.table')!.data;
    const srcTable = src.tensors().find((t) => t.name === 'embedding.table')!.data;
    const row = (t: Float32Array, r: number) => [...t.subarray(r * D, r * D + D)];
    expect(row(table, 0)).toEqual(row(srcTable, 0)); // OOV
    expect(row(table, 1)).toEqual(row(srcTable, 1)); // blue
    expect(row(table, 3)).toEqual(row(srcTable, 3)); // red
    expect(row(table, 2)).toEqual(row(before, 2)); // purple: untouched
    const wide = dst.tensors().find((t) => t.name === 'wide.table')!.data;
    const srcWide = src.tensors().find((t) => t.name === 'wide.table')!.data;
    expect(wide[3]).toBe(srcWide[3]);
  });
});
