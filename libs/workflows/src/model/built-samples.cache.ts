import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { DataDir } from '@abacus/catalog';
import { readShardSync, writeShard, type ColumnarDataset } from '@abacus/runtime';
import { buildSamples, sampleBuildKey, type SampleBuildRequest, type SlotIdSpace } from '@abacus/samples';
import type { ModelRecipe, ResolvedFeature } from './model-recipe.schema';
import { carveValidation, crossFold, crossFoldKey, threeWayKey } from './validation-split';

export interface BuiltSet {
  /** the samples' key with the validation carve (models are cached under it) */
  key: string;
  cached: boolean;
  /** the rows models fit on: the training split less the validation split */
  train: ColumnarDataset;
  /** decisions read this: the last part of the training time range (see validation-split.ts) */
  validation: ColumnarDataset;
  /** the whole training split (train + validation), for cross-fitted checks (see foldOf) */
  trainAll: ColumnarDataset;
  /** whether the rows are in time order (the recipe has a time column) */
  timeOrdered: boolean;
  /** reported results only */
  test: ColumnarDataset;
  inputs: { numeric: string[]; slots: { name: string; vocab: number }[] };
  meta: Record<string, unknown>;
  /** built/<key>, relative to the data directory */
  dir: string;
}

const ID_SPACES = 'id-spaces.json';

/**
 * Built samples, cached on disk in the runtime's shard format under built/<key>/, the key being a
 * hash of (data version, feature definitions, split): trials that need the same samples build them
 * once, also across workers (written to a temporary directory, then renamed into place).
 */
export class BuiltSamplesCache {
  private readonly memo = new Map<string, BuiltSet>();

  constructor(private readonly dataDir: DataDir) {}

  request(recipe: ModelRecipe, features: ResolvedFeature[] = recipe.features): SampleBuildRequest {
    return {
      samples: {
        file: this.dataDir.abs(recipe.sampleFile),
        label: recipe.label,
        time: recipe.time,
        ...(recipe.positive ? { positive: recipe.positive } : {}),
      },
      features: features.map((f) => ({
        name: f.name,
        kind: f.kind,
        source: f.source.kind === 'table' ? { ...f.source, file: this.dataDir.abs(f.source.file) } : f.source,
        ...(f.transform ? { transform: f.transform } : {}),
      })) as SampleBuildRequest['features'],
      split: recipe.testFrom !== null ? { testFrom: recipe.testFrom } : { testFraction: 0.2, seed: recipe.training.seed },
      ...(recipe.filter ? { filter: recipe.filter } : {}),
    };
  }

  key(recipe: ModelRecipe, features?: ResolvedFeature[]): string {
    return sampleBuildKey(this.request(recipe, features));
  }

  async get(
    recipe: ModelRecipe,
    features: ResolvedFeature[] = recipe.features,
    onProgress?: (fraction: number, message: string) => void,
  ): Promise<BuiltSet> {
    const req = this.request(recipe, features);
    const key = sampleBuildKey(req);
    const hit = this.memo.get(key);
    if (hit) return { ...hit, cached: true };
    const splitKey = threeWayKey(key);
    const rel = path.join('built', key);
    const dir = this.dataDir.abs(rel);
    let set: BuiltSet;
    if (fs.existsSync(path.join(dir, 'meta.json')) && fs.existsSync(path.join(dir, ID_SPACES))) {
      const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8')) as BuiltSet['meta'] & {
        inputs: BuiltSet['inputs'];
      };
      const trainAll = readShardSync(path.join(dir, 'train.shard'));
      set = {
        cached: true,
        key: splitKey,
        trainAll,
        timeOrdered: recipe.time !== null,
        ...carveValidation(trainAll, recipe.time !== null),
        test: readShardSync(path.join(dir, 'test.shard')),
        inputs: meta.inputs,
        meta,
        dir: rel,
      };
    } else {
      const built = await buildSamples(req, { onProgress });
      const tmp = this.dataDir.abs(path.join('built', `.${key}.${randomBytes(4).toString('hex')}`));
      fs.mkdirSync(tmp, { recursive: true });
      const vocab = Object.fromEntries(built.inputs.slots.map((s) => [s.name, s.vocab]));
      await writeShard(path.join(tmp, 'train.shard'), built.train, { vocab });
      await writeShard(path.join(tmp, 'test.shard'), built.test, { vocab });
      const meta = { inputs: built.inputs, features: built.features, split: built.split, timings: built.timings };
      fs.writeFileSync(path.join(tmp, 'meta.json'), JSON.stringify(meta, null, 2));
      fs.writeFileSync(path.join(tmp, ID_SPACES), JSON.stringify(built.idSpaces));
      try {
        fs.renameSync(tmp, dir);
      } catch {
        if (fs.existsSync(path.join(dir, ID_SPACES))) fs.rmSync(tmp, { recursive: true, force: true });
        else {
          // built by a version that kept no id spaces: add the file to the existing directory
          const file = path.join(tmp, ID_SPACES);
          fs.renameSync(file, path.join(dir, ID_SPACES));
          fs.rmSync(tmp, { recursive: true, force: true });
        }
      }
      set = {
        key: splitKey,
        cached: false,
        trainAll: built.train,
        timeOrdered: recipe.time !== null,
        ...carveValidation(built.train, recipe.time !== null),
        test: built.test,
        inputs: built.inputs,
        meta,
        dir: rel,
      };
    }
    this.memo.clear(); // keep one set in memory: trials of one experiment follow each other
    this.memo.set(key, set);
    return set;
  }
}

/**
 * Fold `fold` of `folds` of a built set's training range as its validation split, the rest fitted on
 * (validation-split.ts: crossFold); the key names the fold, so models trained on it are cached apart.
 */
export function foldOf(built: BuiltSet, fold: number, folds: number): BuiltSet {
  return {
    ...built,
    key: crossFoldKey(built.key, fold, folds),
    ...crossFold(built.trainAll, fold, folds, built.timeOrdered),
  };
}

/** What the ids of each slot of a built set stand for (see SlotIdSpace), by slot name. */
export function readIdSpaces(dataDir: DataDir, built: BuiltSet): Record<string, SlotIdSpace> {
  return JSON.parse(fs.readFileSync(dataDir.abs(path.join(built.dir, ID_SPACES)), 'utf8')) as Record<string, SlotIdSpace>;
}
