import { readFileSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

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

/** Pure-JS reader of one shard into memory (for the tfjs backend and format checks; files under 2 GiB). */
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

const FLOAT_KINDS = new Set<number>([SectionKind.numeric, SectionKind.labels, SectionKind.weights]);

async function readFully(fh: FileHandle, into: Uint8Array, position: number): Promise<void> {
  // positioned reads of at most 1 GiB each (one read is limited to 2 GiB)
  for (let done = 0; done < into.length; ) {
    const { bytesRead } = await fh.read(into, done, Math.min(into.length - done, 2 ** 30), position + done);
    if (bytesRead === 0) throw new Error('unexpected end of file');
    done += bytesRead;
  }
}

/**
 * Reads one shard into memory without holding the event loop: every section is read straight into
 * its own typed array (no size limit: a 10M-row x 100-feature training split is about 4 GB), and the
 * checksums are verified by the native addon off the event loop where it is built, else in JavaScript
 * 64 MiB at a time between yields. The same result and errors as readShardSync.
 */
export async function readShard(path: string): Promise<ColumnarDataset> {
  const fh = await open(path, 'r');
  try {
    const fixed = new Uint8Array(40);
    await readFully(fh, fixed, 0).catch(() => {
      throw new Error(`${path}: not an Abacus shard`);
    });
    const dv = new DataView(fixed.buffer);
    if (Buffer.from(fixed.subarray(0, 8)).toString('latin1') !== 'ABSHARD\0') throw new Error(`${path}: not an Abacus shard`);
    const version = dv.getUint32(8, true);
    if (version !== SHARD_VERSION) throw new Error(`${path}: unsupported shard version ${version}`);
    const rows = Number(dv.getBigUint64(16, true));
    const jsonLen = dv.getUint32(24, true), nsec = dv.getUint32(28, true);
    const table = new Uint8Array(nsec * 32);
    await readFully(fh, table, 40);
    if (crc32c(table) !== dv.getUint32(36, true)) throw new Error(`${path}: section table checksum mismatch`);
    const jsonBytes = new Uint8Array(jsonLen);
    await readFully(fh, jsonBytes, 40 + nsec * 32);
    if (crc32c(jsonBytes) !== dv.getUint32(32, true)) throw new Error(`${path}: header JSON checksum mismatch`);
    const header = JSON.parse(Buffer.from(jsonBytes).toString('utf8')) as ShardHeader;
    const size = (await fh.stat()).size;
    // the section checksums: natively (memory-mapped, on a thread of the addon's) when the addon loads
    let verified = false;
    let addon: ReturnType<typeof loadNativeAddon> | null = null;
    try {
      addon = loadNativeAddon();
    } catch {
      addon = null;
    }
    if (addon) {
      await addon.openShard(path, true);
      verified = true;
    }
    const tv = new DataView(table.buffer);
    const sec = new Map<string, Float32Array | Int32Array>();
    for (let i = 0; i < nsec; i++) {
      const at = i * 32;
      const off = Number(tv.getBigUint64(at, true)), bytes = Number(tv.getBigUint64(at + 8, true));
      const crc = tv.getUint32(at + 16, true), kind = tv.getUint32(at + 20, true), index = tv.getUint32(at + 24, true);
      if (off + bytes > size || bytes % 4 !== 0) throw new Error(`${path}: section ${i} truncated`);
      const arr = FLOAT_KINDS.has(kind) ? new Float32Array(bytes / 4) : new Int32Array(bytes / 4);
      const u8 = new Uint8Array(arr.buffer);
      await readFully(fh, u8, off);
      if (!verified) {
        let c = 0;
        for (let p = 0; p < u8.length; p += 64 * 2 ** 20) {
          c = crc32c(u8.subarray(p, Math.min(u8.length, p + 64 * 2 ** 20)), c);
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
        if (c !== crc) throw new Error(`${path}: checksum mismatch in section ${i} (kind ${kind})`);
      }
      sec.set(`${kind}:${index}`, arr);
    }
    const get = <T extends Float32Array | Int32Array>(k: string): T => {
      const a = sec.get(k);
      if (!a) throw new Error(`${path}: missing section ${k}`);
      return a as T;
    };
    const out: ColumnarDataset = {
      rows,
      numericNames: header.numericNames,
      numeric: get<Float32Array>(`${SectionKind.numeric}:0`),
      labels: get<Float32Array>(`${SectionKind.labels}:0`),
      slots: header.slots.map((s, i) => ({
        name: s.name,
        offsets: get<Int32Array>(`${SectionKind.slotOffsets}:${i}`),
        ids: get<Int32Array>(`${SectionKind.slotIds}:${i}`),
      })),
    };
    if (header.hasWeights) out.weights = get<Float32Array>(`${SectionKind.weights}:0`);
    if (header.keys.length) out.keys = Object.fromEntries(header.keys.map((k, i) => [k, get<Int32Array>(`${SectionKind.key}:${i}`)]));
    return out;
  } finally {
    await fh.close();
  }
}
