import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { NotFoundException } from '@nestjs/common';
import { z } from 'zod';
import type { DataDir } from '@abacus/catalog';
import type { ModelEntity } from '@abacus/data';
import { exportOnnx } from '@abacus/runtime';

export const modelExportQuerySchema = z.object({ format: z.enum(['safetensors', 'onnx']).default('safetensors') }).strict();
export type ModelExportQuery = z.output<typeof modelExportQuerySchema>;

/** The ONNX file cached beside a checkpoint (rebuilt when the checkpoint is newer). */
export const ONNX_CACHE_NAME = 'model.onnx';

const mtime = (p: string) => fs.statSync(p, { throwIfNoEntry: false })?.mtimeMs;

/**
 * The file to stream for a model version's export: its checkpoint's model.safetensors, or the
 * ONNX graph of that checkpoint (exported once and cached beside it as model.onnx; when the
 * checkpoint directory is not writable, exported to the data directory's tmp/ and removed after).
 */
export async function modelExportFile(
  dataDir: DataDir,
  model: ModelEntity,
  format: ModelExportQuery['format'],
): Promise<{ file: string; bytes: number; filename: string; cleanup: boolean }> {
  const label = `model ${model.id} ("${model.name}" v${model.version})`;
  if (!model.checkpointPath) throw new NotFoundException(`${label} has no checkpoint: it has not been trained and saved yet`);
  // a checkpoint a worker on another host saved: from the deployment's store
  if (dataDir.shared && !fs.existsSync(dataDir.abs(model.checkpointPath)) && (await dataDir.exists(model.checkpointPath)))
    await dataDir.pull(model.checkpointPath);
  const dir = dataDir.abs(model.checkpointPath);
  const weights = path.join(dir, 'model.safetensors');
  const config = path.join(dir, 'model.json');
  const saved = mtime(config);
  if (saved === undefined || mtime(weights) === undefined)
    throw new NotFoundException(
      `${label}: its checkpoint ${model.checkpointPath} is missing on the server (no model.json / model.safetensors)`,
    );
  const base = `${model.name.replace(/[^A-Za-z0-9._-]/g, '_')}-v${model.version}`;
  if (format === 'safetensors')
    return { file: weights, bytes: fs.statSync(weights).size, filename: `${base}.safetensors`, cleanup: false };
  const cached = path.join(dir, ONNX_CACHE_NAME);
  const newest = Math.max(saved, mtime(weights)!);
  const have = mtime(cached);
  if (have !== undefined && have >= newest)
    return { file: cached, bytes: fs.statSync(cached).size, filename: `${base}.onnx`, cleanup: false };
  try {
    const r = await exportOnnx(dir, cached);
    return { file: cached, bytes: r.bytes, filename: `${base}.onnx`, cleanup: false };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EROFS' && code !== 'EPERM') throw err;
    const tmp = path.join(dataDir.tmpDir(), `export-${randomBytes(6).toString('hex')}.onnx`);
    const r = await exportOnnx(dir, tmp);
    return { file: tmp, bytes: r.bytes, filename: `${base}.onnx`, cleanup: true };
  }
}
