import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { it } from 'vitest';
import { simulateWorld, writeWorld } from '@abacus/samples';
import { DataDir } from '@abacus/catalog';
import { BuiltSamplesCache } from './model/built-samples.cache';
import { ModelTrainer } from './model/model-trainer';
import { architectureSchema, trainingSchema, type ModelRecipe } from './model/model-recipe.schema';

it('scratch', async () => {
  const rows = Number(process.env.ROWS ?? 400000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scr-'));
  const t0 = Date.now();
  const world = simulateWorld({ seed: 5, rows });
  await writeWorld(world, path.join(dir, 'world'));
  console.log('sim ms', Date.now() - t0);
  const dd = new DataDir(dir);
  const cache = new BuiltSamplesCache(dd);
  const trainer = new ModelTrainer(dd, { backend: 'cpu', threads: 2 });
  const feats = world.groundTruth.features.filter((f) => f.inConfigOf.includes('feed'));
  const mk = (names: string[], arch: object, tr: object): ModelRecipe => ({
    sampleSetId: 'x', sampleFile: 'world/samples/feed.parquet', label: 'click', time: 'ts', testFrom: null, filter: null,
    features: feats.filter((f) => names.includes(f.name)).map((f) => ({ name: f.name, kind: f.kind as 'numeric', source: { kind: 'column' } })),
    architecture: architectureSchema.parse(arch), training: trainingSchema.parse(tr), modelId: null,
  });
  const all = feats.map((f) => f.name);
  const noNoise = all.filter((n) => !world.groundTruth.features.find((f) => f.name === n && (f.role === 'noise' || f.role === 'redundant')));
  const configs: [object, object][] = JSON.parse(process.env.CONFIGS ?? '[[{},{}]]');
  for (const [arch, tr0] of configs) {
    for (const seed of [1, 2, 3]) {
      const tr = { ...tr0, seed };
      const res: string[] = [];
      for (const names of [all, noNoise]) {
        const r = mk(names, arch, tr);
        const built = await cache.get(r);
        const t = await trainer.trainOrReuse(built, r.architecture, r.training);
        res.push(`${t.metrics.auc.toFixed(4)} (ep ${t.metrics.epochs}, ${t.metrics.trainMs}ms, rows ${built.train.rows})`);
      }
      console.log(JSON.stringify(arch), JSON.stringify(tr), res.join('  vs no-noise/redundant  '));
    }
  }
}, 900_000);
