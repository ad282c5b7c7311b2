import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

import type { NativeModelState, NativeTensor } from './binding';
import type { ModelSpec } from './model-spec.schema';
import { readSafetensors, writeSafetensors, type SafeTensor } from './safetensors';

export const CHECKPOINT_FORMAT = 'abacus-runtime-checkpoint';
export const CHECKPOINT_VERSION = 1;

export interface CheckpointConfig {
  format: typeof CHECKPOINT_FORMAT;
  version: number;
  spec: ModelSpec;
  state: { step: number; normalized: boolean; frozen: boolean[] };
  backend: string;
  savedAt: string;
  files: { model: string; optimizer: string };
}

function transpose(src: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(src.length);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = src[i * cols + j]!;
  return out;
}

/**
 * Checkpoint tensors in the PyTorch layout a user expects: one embedding per slot
 * ("embedding.<slot>", [vocab, dim]), Linear weights as [out, in] ("mlp.<l>.weight").
 */
export function toCheckpointTensors(spec: ModelSpec, params: NativeTensor[]): SafeTensor[] {
  const out: SafeTensor[] = [];
  const by = new Map(params.map((p) => [p.name, p]));
  const D = spec.embeddingDim;
  out.push(by.get('normalization.mean')!, by.get('normalization.std')!);
  let base = 0;
  const table = by.get('embedding.table')!.data, wide = by.get('wide.table')?.data;
  for (const s of spec.slots) {
    out.push({ name: `embedding.${s.name}`, shape: [s.vocab, D], data: table.subarray(base * D, (base + s.vocab) * D) });
    if (wide) out.push({ name: `wide.${s.name}`, shape: [s.vocab], data: wide.subarray(base, base + s.vocab) });
    base += s.vocab;
  }
  if (spec.wide) out.push(by.get('wide.numeric')!);
  for (let l = 0; l <= spec.hidden.length; l++) {
    const w = by.get(`mlp.${l}.weight`)!;
    out.push({ name: `mlp.${l}.weight`, shape: [w.shape[1]!, w.shape[0]!], data: transpose(w.data, w.shape[0]!, w.shape[1]!) });
    out.push(by.get(`mlp.${l}.bias`)!);
  }
  return out;
}

export async function saveCheckpoint(dir: string, spec: ModelSpec, backend: string, state: NativeModelState, params: NativeTensor[], opt: NativeTensor[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeSafetensors(path.join(dir, 'model.safetensors'), toCheckpointTensors(spec, params), { format: 'pt' });
  await writeSafetensors(path.join(dir, 'optimizer.safetensors'), opt, { step: String(state.step) });
  const cfg: CheckpointConfig = {
    format: CHECKPOINT_FORMAT,
    version: CHECKPOINT_VERSION,
    spec,
    state: { step: state.step, normalized: state.normalized, frozen: state.frozen },
    backend,
    savedAt: new Date().toISOString(),
    files: { model: 'model.safetensors', optimizer: 'optimizer.safetensors' },
  };
  // model.json last: a directory with model.json is a complete checkpoint
  await writeFile(path.join(dir, 'model.json.tmp'), JSON.stringify(cfg, null, 2));
  await rename(path.join(dir, 'model.json.tmp'), path.join(dir, 'model.json'));
}

export async function readCheckpointConfig(dir: string): Promise<CheckpointConfig> {
  let raw: string;
  try {
    raw = await readFile(path.join(dir, 'model.json'), 'utf8');
  } catch {
    throw new Error(`${dir} is not a runtime checkpoint (no model.json)`);
  }
  const cfg = JSON.parse(raw) as CheckpointConfig;
  if (cfg.format !== CHECKPOINT_FORMAT) throw new Error(`${dir}/model.json is not an ${CHECKPOINT_FORMAT}`);
  if (cfg.version !== CHECKPOINT_VERSION) throw new Error(`${dir}: checkpoint version ${cfg.version} is not supported (expected ${CHECKPOINT_VERSION})`);
  return cfg;
}

/** Copies a checkpoint's tensors into a model's live views (shapes must match). */
export async function loadCheckpointInto(dir: string, spec: ModelSpec, params: NativeTensor[], opt: NativeTensor[], withOptimizer: boolean): Promise<void> {
  const m = await readSafetensors(path.join(dir, 'model.safetensors'));
  const by = new Map(params.map((p) => [p.name, p]));
  const get = (name: string, n: number) => {
    const t = m.tensors.get(name);
    if (!t) throw new Error(`checkpoint ${dir} has no tensor ${name}`);
    if (t.data.length !== n) throw new Error(`checkpoint tensor ${name} has ${t.data.length} values, the model expects ${n}`);
    return t.data;
  };
  for (const n of ['normalization.mean', 'normalization.std', 'wide.numeric']) {
    const p = by.get(n);
    if (p) p.data.set(get(n, p.data.length));
  }
  const D = spec.embeddingDim;
  let base = 0;
  const table = by.get('embedding.table')!.data, wide = by.get('wide.table')?.data;
  for (const s of spec.slots) {
    table.set(get(`embedding.${s.name}`, s.vocab * D), base * D);
    if (wide) wide.set(get(`wide.${s.name}`, s.vocab), base);
    base += s.vocab;
  }
  for (let l = 0; l <= spec.hidden.length; l++) {
    const w = by.get(`mlp.${l}.weight`)!;
    w.data.set(transpose(get(`mlp.${l}.weight`, w.data.length), w.shape[1]!, w.shape[0]!));
    const b = by.get(`mlp.${l}.bias`)!;
    b.data.set(get(`mlp.${l}.bias`, b.data.length));
  }
  if (withOptimizer) {
    const o = await readSafetensors(path.join(dir, 'optimizer.safetensors'));
    for (const t of opt) {
      const src = o.tensors.get(t.name);
      if (!src || src.data.length !== t.data.length) throw new Error(`checkpoint ${dir}: optimizer state ${t.name} missing or of another size`);
      t.data.set(src.data);
    }
  }
}

/** Reads only the per-slot embedding (and wide) rows of a checkpoint, for transfer. */
export async function readSlotEmbeddings(dir: string): Promise<{ cfg: CheckpointConfig; emb: Map<string, Float32Array>; wide: Map<string, Float32Array> }> {
  const cfg = await readCheckpointConfig(dir);
  const m = await readSafetensors(path.join(dir, 'model.safetensors'));
  const emb = new Map<string, Float32Array>(), wide = new Map<string, Float32Array>();
  for (const s of cfg.spec.slots) {
    const e = m.tensors.get(`embedding.${s.name}`);
    if (e) emb.set(s.name, e.data);
    const w = m.tensors.get(`wide.${s.name}`);
    if (w) wide.set(s.name, w.data);
  }
  return { cfg, emb, wide };
}
