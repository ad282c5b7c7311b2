import { open, readFile } from 'node:fs/promises';

/** Minimal safetensors (F32 only): u64 LE header length, JSON header, raw little-endian data. */
export interface SafeTensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

export async function writeSafetensors(path: string, tensors: SafeTensor[], metadata: Record<string, string> = {}): Promise<void> {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let off = 0;
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) throw new Error(`tensor ${t.name}: shape [${t.shape}] does not match ${t.data.length} values`);
    header[t.name] = { dtype: 'F32', shape: t.shape, data_offsets: [off, off + n * 4] };
    off += n * 4;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const jb = Buffer.from(json, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(jb.length));
  const fh = await open(path, 'w');
  try {
    await fh.write(len);
    await fh.write(jb);
    for (const t of tensors) {
      // write in 64 MiB pieces straight from the tensor's memory
      const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      for (let p = 0; p < bytes.length; p += 1 << 26) await fh.write(bytes.subarray(p, Math.min(bytes.length, p + (1 << 26))));
    }
  } finally {
    await fh.close();
  }
}

export interface SafetensorsFile {
  metadata: Record<string, string>;
  tensors: Map<string, { shape: number[]; data: Float32Array }>;
}

export async function readSafetensors(path: string): Promise<SafetensorsFile> {
  const buf = await readFile(path);
  if (buf.length < 8) throw new Error(`${path}: not a safetensors file`);
  const hl = Number(buf.readBigUInt64LE(0));
  if (8 + hl > buf.length) throw new Error(`${path}: truncated safetensors header`);
  type Entry = { dtype: string; shape: number[]; data_offsets: [number, number] };
  const header = JSON.parse(buf.subarray(8, 8 + hl).toString('utf8')) as Record<string, unknown>;
  const base = 8 + hl;
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const [name, raw] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const h = raw as Entry;
    if (h.dtype !== 'F32') throw new Error(`${path}: tensor ${name} has dtype ${h.dtype}; only F32 is supported`);
    const [b, e] = h.data_offsets;
    if (base + e > buf.length || e - b !== h.shape.reduce((x, y) => x * y, 1) * 4) throw new Error(`${path}: tensor ${name} has bad offsets`);
    const data = new Float32Array(e / 4 - b / 4);
    new Uint8Array(data.buffer).set(buf.subarray(base + b, base + e));
    tensors.set(name, { shape: h.shape, data });
  }
  return { metadata: (header.__metadata__ as Record<string, string>) ?? {}, tensors };
}
