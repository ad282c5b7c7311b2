import { readFileSync } from 'node:fs';

import { loadNativeAddon } from './binding';
import { crc32c } from './crc32c';
import type { ColumnarDataset, ShardDataset } from './dataset.types';
import { checkColumnar } from './native-data.mapper';

/**
 * Shard file layout, version 1 (all integers little-endian; see README "Shard format"):
 *   0  magic "ABSHARD\0" | 8 u32 version | 12 u32 flags | 16 u64 rows | 24 u32 jsonLength
 *   28 u32 sectionCount | 32 u32 crc32c(json) | 36 u32 crc32c(section table)
 *   40 section table: sectionCount x { u64 offset, u64 bytes, u32 crc32c, u32 kind, u32 index, u32 0 }
 *   then the JSON header (utf-8), then the sections, each starting on a 64-byte boundary.
 */
export const SHARD_VERSION = 1;
export const SectionKind = { numeric: 1, labels: 2, weights: 3, key: 4, slotOffsets: 5, slotIds: 6 } as const;

export interface ShardHeader {
  format: 'abacus-shard';
  version: number;
  rows: number;
  numericNames: string[];
  slots: { name: string; nnz: number; vocab?: number }[];
  keys: string[];
  hasWeights: boolean;
}

/** Writes one shard file (atomically: temp file + rename). Checksums are computed natively. */
export async function writeShard(path: string, data: ColumnarDataset, opts: { vocab?: Record<string, number> } = {}): Promise<ShardHeader> {
  checkColumnar(data);
  const keys = Object.keys(data.keys ?? {});
  const header: ShardHeader = {
    format: 'abacus-shard',
    version: SHARD_VERSION,
    rows: data.rows,
    numericNames: data.numericNames,
    slots: data.slots.map((s) => {
      const v = opts.vocab?.[s.name];
      return v === undefined ? { name: s.name, nnz: s.offsets[data.rows]! } : { name: s.name, nnz: s.offsets[data.rows]!, vocab: v };
    }),
    keys,
    hasWeights: !!data.weights,
  };
  const sections: { kind: number; index: number; data: Float32Array | Int32Array }[] = [
    { kind: SectionKind.numeric, index: 0, data: data.numeric },
    { kind: SectionKind.labels, index: 0, data: data.labels },
  ];
  if (data.weights) sections.push({ kind: SectionKind.weights, index: 0, data: data.weights });
  keys.forEach((k, i) => sections.push({ kind: SectionKind.key, index: i, data: data.keys![k]! }));
  data.slots.forEach((s, i) => {
    sections.push({ kind: SectionKind.slotOffsets, index: i, data: s.offsets });
    sections.push({ kind: SectionKind.slotIds, index: i, data: s.ids.subarray(0, s.offsets[data.rows]!) });
  });
  await loadNativeAddon().writeShard(path, data.rows, JSON.stringify(header), sections);
  return header;
}

/**
 * Opens shard files as one dataset. The native code memory-maps them (checksums verified off the
 * event loop unless verify is false); no sample data is loaded into JS.
 */
export async function openShards(paths: string[], opts: { verify?: boolean } = {}): Promise<ShardDataset> {
  if (paths.length === 0) throw new Error('openShards needs at least one path');
  const addon = loadNativeAddon();
  const shards: ShardDataset['shards'] = [];
  let first: ShardHeader | undefined;
  for (const p of paths) {
    const handle = await addon.openShard(p, opts.verify ?? true);
    const h = JSON.parse(handle.json) as ShardHeader;
    if (!first) first = h;
    else if (JSON.stringify(h.numericNames) !== JSON.stringify(first.numericNames) || JSON.stringify(h.slots.map((s) => s.name)) !== JSON.stringify(first.slots.map((s) => s.name)) || JSON.stringify(h.keys) !== JSON.stringify(first.keys) || h.hasWeights !== first.hasWeights)
      throw new Error(`shard ${p} has a different schema from ${paths[0]}`);
    shards.push({ path: p, rows: handle.rows, handle });
  }
  return {
    kind: 'shards',
    rows: shards.reduce((a, s) => a + s.rows, 0),
    numericNames: first!.numericNames,
    slots: first!.slots.map((s) => (s.vocab === undefined ? { name: s.name } : { name: s.name, vocab: s.vocab })),
    keys: first!.keys,
    hasWeights: first!.hasWeights,
    shards,
  };
}

/** Pure-JS reader of one shard into memory (for the tfjs backend and format checks). */
export function readShardSync(path: string): ColumnarDataset {
  const buf = readFileSync(path);
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (buf.subarray(0, 8).toString('latin1') !== 'ABSHARD\0') throw new Error(`${path}: not an Abacus shard`);
  const version = dv.getUint32(8, true);
  if (version !== SHARD_VERSION) throw new Error(`${path}: unsupported shard version ${version}`);
  const rows = Number(dv.getBigUint64(16, true));
  const jsonLen = dv.getUint32(24, true), nsec = dv.getUint32(28, true);
  const table = buf.subarray(40, 40 + nsec * 32);
  if (crc32c(table) !== dv.getUint32(36, true)) throw new Error(`${path}: section table checksum mismatch`);
  const jsonBytes = buf.subarray(40 + nsec * 32, 40 + nsec * 32 + jsonLen);
  if (crc32c(jsonBytes) !== dv.getUint32(32, true)) throw new Error(`${path}: header JSON checksum mismatch`);
  const header = JSON.parse(jsonBytes.toString('utf8')) as ShardHeader;
  const sec = new Map<string, Uint8Array>();
  for (let i = 0; i < nsec; i++) {
    const at = 40 + i * 32;
    const off = Number(dv.getBigUint64(at, true)), bytes = Number(dv.getBigUint64(at + 8, true));
    const crc = dv.getUint32(at + 16, true), kind = dv.getUint32(at + 20, true), index = dv.getUint32(at + 24, true);
    const body = buf.subarray(off, off + bytes);
    if (body.length !== bytes) throw new Error(`${path}: section ${i} truncated`);
    if (crc32c(body) !== crc) throw new Error(`${path}: checksum mismatch in section ${i} (kind ${kind})`);
    sec.set(`${kind}:${index}`, body);
  }
  const f32 = (k: string) => {
    const b = sec.get(k);
    if (!b) throw new Error(`${path}: missing section ${k}`);
    return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  };
  const i32 = (k: string) => {
    const b = sec.get(k);
    if (!b) throw new Error(`${path}: missing section ${k}`);
    return new Int32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  };
  const out: ColumnarDataset = {
    rows,
    numericNames: header.numericNames,
    numeric: f32(`${SectionKind.numeric}:0`),
    labels: f32(`${SectionKind.labels}:0`),
    slots: header.slots.map((s, i) => ({ name: s.name, offsets: i32(`${SectionKind.slotOffsets}:${i}`), ids: i32(`${SectionKind.slotIds}:${i}`) })),
  };
  if (header.hasWeights) out.weights = f32(`${SectionKind.weights}:0`);
  if (header.keys.length) out.keys = Object.fromEntries(header.keys.map((k, i) => [k, i32(`${SectionKind.key}:${i}`)]));
  return out;
}
