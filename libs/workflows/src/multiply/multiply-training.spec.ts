import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DataDir } from '@abacus/catalog';
import type { ColumnarDataset } from '@abacus/runtime';
import { Prng } from '@abacus/samples';
import type { BuiltSet } from '../model/built-samples.cache';
import { ModelTrainer } from '../model/model-trainer';
import { architectureSchema, trainingSchema } from '../model/model-recipe.schema';
import { domainLossWeights } from './multiply-trial.handler';

describe('domainLossWeights', () => {
  it('weighs each row by its domain, 1 where none is named', () => {
    const slot = { ids: Int32Array.from([1, 2, 3, 2]), offsets: Int32Array.from([0, 1, 2, 3, 4]) };
    const w = domainLossWeights(
      slot,
      { kind: 'dictionary', values: ['feed/a', 'search/b', 'target'] },
      { 'feed/a': 0.25, 'search/b': 3 },
      4,
    );
    expect([...w]).toEqual([0.25, 3, 1, 3]);
    expect(() => domainLossWeights(slot, { kind: 'identity' }, {}, 4)).toThrow(/not dictionary/);
  });
});

/** rows whose click depends on the id of one slot (odd ids click more); ids drawn uniformly from `ids` */
function dataset(rows: number, ids: number[], seed: number): ColumnarDataset {
  const rng = new Prng(seed);
  const slotIds = new Int32Array(rows);
  const offsets = new Int32Array(rows + 1);
  const labels = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    const id = ids[Math.floor(rng.next() * ids.length)];
    slotIds[r] = id;
    offsets[r + 1] = r + 1;
    labels[r] = rng.next() < (id % 2 ? 0.7 : 0.2) ? 1 : 0;
  }
  return { rows, numericNames: [], numeric: new Float32Array(0), slots: [{ name: 'x', ids: slotIds, offsets }], labels };
}

describe('pretrain → fine-tune with frozen embeddings', () => {
  it('leaves the embedding rows as pretraining left them; without freezing, fine-tuning moves them', async () => {
    const dataDir = new DataDir(fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-ptf-')));
    const trainer = new ModelTrainer(dataDir, { backend: 'cpu', threads: 1 });
    const arch = architectureSchema.parse({ embeddingDim: 4, hidden: [4], wide: false });
    const training = trainingSchema.parse({ epochs: 2, batchSize: 64, validationFraction: 0 });
    // pretraining sees ids 1..4, fine-tuning ids 5..8
    const pre = dataset(2000, [1, 2, 3, 4], 1);
    const fine = dataset(2000, [5, 6, 7, 8], 2);
    const built: BuiltSet = {
      key: 'ptf-test',
      cached: false,
      train: pre,
      trainAll: pre,
      timeOrdered: true,
      validation: dataset(500, [5, 6, 7, 8], 4),
      test: dataset(500, [5, 6, 7, 8], 3),
      inputs: { numeric: [], slots: [{ name: 'x', vocab: 9 }] },
      meta: {},
      dir: 'built/ptf-test',
    };
    const rows = (t: Awaited<ReturnType<ModelTrainer['trainOrReuse']>>) =>
      Float32Array.from(t.model.tensors().find((x) => x.name === 'embedding.table')!.data);
    const pretrained = rows(await trainer.trainOrReuse({ ...built, key: 'pre-only' }, arch, training));
    const frozen = rows(
      await trainer.pretrainFinetuneOrReuse(built, pre, fine, 't', arch, training, {}, { freezeEmbeddings: true }),
    );
    const free = rows(
      await trainer.pretrainFinetuneOrReuse(built, pre, fine, 't', arch, training, {}, { freezeEmbeddings: false }),
    );
    const D = 4;
    const row = (t: Float32Array, id: number) => [...t.subarray(id * D, id * D + D)];
    for (let id = 0; id <= 8; id++) expect(row(frozen, id)).toEqual(row(pretrained, id));
    for (const id of [5, 6, 7, 8]) expect(row(free, id)).not.toEqual(row(pretrained, id));
  });
});
