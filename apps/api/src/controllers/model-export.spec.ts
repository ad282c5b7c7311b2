import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { NotFoundException } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataDir } from '@abacus/catalog';
import type { ModelEntity } from '@abacus/data';
import { RuntimeModel } from '@abacus/runtime';
import { modelExportFile, modelExportQuerySchema } from './model-export';

describe('model export files', () => {
  let root: string;
  let dataDir: DataDir;
  const model = (checkpointPath: string | null) =>
    ({ id: '00000000-0000-4000-8000-000000000001', name: 'ctr base', version: 3, checkpointPath }) as ModelEntity;

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'abacus-export-'));
    dataDir = new DataDir(root);
    const m = RuntimeModel.create(
      { numeric: ['x'], slots: [{ name: 's', vocab: 5 }], embeddingDim: 2, hidden: [3] },
      { backend: 'cpu', threads: 1 },
    );
    await m.save(path.join(root, 'ckpt', 'a'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('format defaults to safetensors and accepts only safetensors | onnx', () => {
    expect(modelExportQuerySchema.parse({})).toEqual({ format: 'safetensors' });
    expect(modelExportQuerySchema.safeParse({ format: 'pt' }).success).toBe(false);
  });

  it('404 with the reason when the version has no checkpoint or its files are gone', async () => {
    const none = modelExportFile(dataDir, model(null), 'onnx');
    await expect(none).rejects.toBeInstanceOf(NotFoundException);
    await expect(none).rejects.toThrow(/"ctr base" v3\) has no checkpoint/);
    await expect(modelExportFile(dataDir, model('ckpt/gone'), 'safetensors')).rejects.toThrow(/checkpoint ckpt\/gone is missing/);
  });

  it('safetensors is the checkpoint file; ONNX is exported once, cached beside it and rebuilt when the checkpoint is newer', async () => {
    const dir = path.join(root, 'ckpt', 'a');
    const st = await modelExportFile(dataDir, model('ckpt/a'), 'safetensors');
    expect(st).toEqual({
      file: path.join(dir, 'model.safetensors'),
      bytes: fs.statSync(path.join(dir, 'model.safetensors')).size,
      filename: 'ctr_base-v3.safetensors',
      cleanup: false,
    });
    const first = await modelExportFile(dataDir, model('ckpt/a'), 'onnx');
    expect(first.file).toBe(path.join(dir, 'model.onnx'));
    expect(first.filename).toBe('ctr_base-v3.onnx');
    expect(fs.statSync(first.file).size).toBe(first.bytes);
    // a cached file is reused as it is
    const old = new Date(Date.now() + 60_000);
    fs.utimesSync(first.file, old, old);
    const cachedAt = fs.statSync(first.file).mtimeMs;
    await modelExportFile(dataDir, model('ckpt/a'), 'onnx');
    expect(fs.statSync(first.file).mtimeMs).toBe(cachedAt);
    // a checkpoint saved after the cached export makes it stale
    const later = new Date(Date.now() + 120_000);
    fs.utimesSync(path.join(dir, 'model.safetensors'), later, later);
    await modelExportFile(dataDir, model('ckpt/a'), 'onnx');
    expect(fs.statSync(first.file).mtimeMs).not.toBe(cachedAt);
  });
});
