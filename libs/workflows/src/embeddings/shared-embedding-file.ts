import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { readSafetensors, writeSafetensors, type RuntimeModel, type SafeTensor } from '@abacus/runtime';
import type { SlotIdSpace } from '@abacus/samples';

export const SHARED_EMBEDDING_FORMAT = 'abacus-shared-embedding';

/** One slot of a shared embedding: its rows ([rows, dim]), its wide weights and what its ids stand for. */
export interface EmbeddingSlotData {
  name: string;
  idSpace: SlotIdSpace;
  rows: number;
  emb: Float32Array;
  wide: Float32Array | null;
}

/** What carrying one slot into a model did: rows copied of the model's vocabulary, or why none were. */
export interface SlotInitReport {
  slot: string;
  copied: number;
  of: number;
  skipped?: string;
}

/** The slots of a trained model, by what their ids stand for, except `exclude` and bucketised numerics. */
export function extractSlots(
  model: RuntimeModel,
  idSpaces: Record<string, SlotIdSpace>,
  exclude: Set<string>,
): EmbeddingSlotData[] {
  const D = model.spec.embeddingDim;
  const by = new Map(model.tensors().map((t) => [t.name, t.data]));
  const table = by.get('embedding.table')!;
  const wide = by.get('wide.table') ?? null;
  const out: EmbeddingSlotData[] = [];
  let base = 0;
  for (const s of model.spec.slots) {
    const idSpace = idSpaces[s.name];
    if (!exclude.has(s.name) && idSpace && idSpace.kind !== 'buckets') {
      out.push({
        name: s.name,
        idSpace,
        rows: s.vocab,
        emb: Float32Array.from(table.subarray(base * D, (base + s.vocab) * D)),
        wide: wide ? Float32Array.from(wide.subarray(base, base + s.vocab)) : null,
      });
    }
    base += s.vocab;
  }
  return out;
}

/** Writes the safetensors file (`embedding.<slot>`, `wide.<slot>`; id spaces and dim in the metadata); returns its sha256 and size. */
export async function writeSharedEmbeddingFile(
  file: string,
  dim: number,
  slots: EmbeddingSlotData[],
  metadata: Record<string, string> = {},
): Promise<{ sha256: string; bytes: number }> {
  const tensors: SafeTensor[] = [];
  const meta: Record<string, string> = { ...metadata, format: SHARED_EMBEDDING_FORMAT, dim: String(dim) };
  for (const s of slots) {
    tensors.push({ name: `embedding.${s.name}`, shape: [s.rows, dim], data: s.emb });
    if (s.wide) tensors.push({ name: `wide.${s.name}`, shape: [s.rows], data: s.wide });
    meta[`idspace.${s.name}`] = JSON.stringify(s.idSpace);
  }
  const tmp = `${file}.${process.pid}.tmp`;
  await writeSafetensors(tmp, tensors, meta);
  fs.renameSync(tmp, file);
  const buf = fs.readFileSync(file);
  return { sha256: createHash('sha256').update(buf).digest('hex'), bytes: buf.length };
}

export async function readSharedEmbeddingFile(file: string): Promise<{ dim: number; slots: Map<string, EmbeddingSlotData> }> {
  const f = await readSafetensors(file);
  if (f.metadata.format !== SHARED_EMBEDDING_FORMAT) throw new Error('not a shared embedding file');
  const dim = Number(f.metadata.dim);
  const slots = new Map<string, EmbeddingSlotData>();
  for (const [k, v] of Object.entries(f.metadata)) {
    if (!k.startsWith('idspace.')) continue;
    const name = k.slice('idspace.'.length);
    const e = f.tensors.get(`embedding.${name}`);
    if (!e) throw new Error(`shared embedding file lacks embedding.${name}`);
    slots.set(name, {
      name,
      idSpace: JSON.parse(v) as SlotIdSpace,
      rows: e.shape[0],
      emb: e.data,
      wide: f.tensors.get(`wide.${name}`)?.data ?? null,
    });
  }
  return { dim, slots };
}

const sameNumbers = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Which rows of a source slot carry to which ids of a target slot: equal values (dictionaries, matched by
 * their string form; id 0, out of vocabulary, to id 0), equal ids (identity; hash buckets and bucket
 * boundaries when they are the same), or nothing with the reason.
 */
export function mapSlotIds(
  target: SlotIdSpace,
  targetVocab: number,
  source: SlotIdSpace,
  sourceRows: number,
): { targetIds: Int32Array; sourceRows: Int32Array } | { reason: string } {
  const same = (n: number) => {
    const ids = new Int32Array(n);
    for (let i = 0; i < n; i++) ids[i] = i;
    return { targetIds: ids, sourceRows: ids };
  };
  if (target.kind !== source.kind) return { reason: `ids are ${source.kind} in the embedding but ${target.kind} in the model` };
  switch (target.kind) {
    case 'identity':
      return same(Math.min(targetVocab, sourceRows));
    case 'hash':
      if (source.kind === 'hash' && source.buckets === target.buckets) return same(Math.min(targetVocab, sourceRows));
      return { reason: 'hashed into another number of buckets' };
    case 'buckets':
      if (source.kind === 'buckets' && sameNumbers(source.boundaries, target.boundaries))
        return same(Math.min(targetVocab, sourceRows));
      return { reason: 'bucketed with other boundaries' };
    case 'dictionary': {
      if (source.kind !== 'dictionary') return { reason: 'not a dictionary' };
      const rowOf = new Map<string, number>();
      source.values.forEach((v, i) => {
        if (i + 1 < sourceRows) rowOf.set(String(v), i + 1);
      });
      const t: number[] = [0];
      const s: number[] = [0];
      target.values.forEach((v, i) => {
        const r = rowOf.get(String(v));
        if (r !== undefined && i + 1 < targetVocab) {
          t.push(i + 1);
          s.push(r);
        }
      });
      return { targetIds: Int32Array.from(t), sourceRows: Int32Array.from(s) };
    }
  }
}

/**
 * Initialises a model's slots from a shared embedding file: every slot the file has under the same name,
 * with the same dim, row by row through the ids' meaning; optionally frozen.
 */
export async function applySharedEmbedding(
  model: RuntimeModel,
  idSpaces: Record<string, SlotIdSpace>,
  file: string,
  freeze: boolean,
): Promise<SlotInitReport[]> {
  const src = await readSharedEmbeddingFile(file);
  const D = model.spec.embeddingDim;
  const report: SlotInitReport[] = [];
  for (const s of model.spec.slots) {
    const e = src.slots.get(s.name);
    const target = idSpaces[s.name];
    if (!e || !target) continue;
    if (src.dim !== D) {
      report.push({ slot: s.name, copied: 0, of: s.vocab, skipped: `embedding dim ${src.dim}, the model's ${D}` });
      continue;
    }
    const m = mapSlotIds(target, s.vocab, e.idSpace, e.rows);
    if ('reason' in m) {
      report.push({ slot: s.name, copied: 0, of: s.vocab, skipped: m.reason });
      continue;
    }
    const n = m.targetIds.length;
    const emb = new Float32Array(n * D);
    const wide = e.wide ? new Float32Array(n) : null;
    for (let i = 0; i < n; i++) {
      const r = m.sourceRows[i];
      emb.set(e.emb.subarray(r * D, r * D + D), i * D);
      if (wide) wide[i] = e.wide![r];
    }
    await model.setSlotRows(s.name, m.targetIds, emb, wide, freeze);
    report.push({ slot: s.name, copied: n, of: s.vocab });
  }
  return report;
}
