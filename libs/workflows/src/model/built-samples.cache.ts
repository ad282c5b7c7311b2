import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { DataDir } from '@abacus/catalog';
import { readShard, writeShard, type ColumnarDataset } from '@abacus/runtime';
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
  private base: Memo | null = null;
  private last: Memo | null = null;

  constructor(
    private readonly dataDir: DataDir,
    /**
     * threads: worker threads a build encodes its features on (see buildSamples); openSamples: the
     * local copy of a set registered by reference (its recipe's sampleFile is a store URL), opened
     * only when the samples are built, not when they are cached
     */
    private readonly opts: {
      memoryLimitBytes?: number;
      threads?: number;
      openSamples?: (
        recipe: ModelRecipe,
        onProgress?: (fraction: number, message: string) => void,
      ) => Promise<{ path: string; release(): void }>;
    } = {},
  ) {}

  request(recipe: ModelRecipe, features: ResolvedFeature[] = recipe.features): SampleBuildRequest {
    return {
      samples: {
        ...(recipe.sampleVersion
          ? { file: recipe.sampleFile, version: recipe.sampleVersion }
          : { file: this.dataDir.abs(recipe.sampleFile) }),
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
    for (const m of [this.base, this.last]) if (m?.key === key) return { ...m.set, cached: true };
    // a subset of a set at hand (in memory, or the recipe's whole feature list on disk): its columns,
    // not a second build; every feature is encoded on its own, so the columns are the same
    const defs = featureDefs(req);
    const source = sourceOf(req);
    const covers = (m: Pick<Memo, 'source' | 'defs'> | null) =>
      !!m && m.source === source && [...defs].every(([name, def]) => m.defs.get(name) === def);
    let whole = this.base && covers(this.base) ? this.base : null;
    if (!whole && features.length < recipe.features.length) {
      const fullReq = this.request(recipe);
      const fullKey = sampleBuildKey(fullReq);
      if (
        covers({ source: sourceOf(fullReq), defs: featureDefs(fullReq) }) &&
        fs.existsSync(this.dataDir.abs(path.join('built', fullKey, ID_SPACES)))
      ) {
        await this.get(recipe, recipe.features, onProgress);
        whole = this.base;
      }
    }
    if (whole) {
      const set = projectBuilt(
        whole.set,
        features.map((f) => f.name),
        threeWayKey(key),
      );
      this.last = { key, set, source, defs };
      return set;
    }
    const set = await this.load(req, key, recipe, onProgress);
    // keep the last whole set (subsets are cut from it) and the last subset: trials of one experiment follow each other
    this.base = { key, set, source, defs };
    this.last = null;
    return set;
  }

  private async load(
    req: SampleBuildRequest,
    key: string,
    recipe: ModelRecipe,
    onProgress?: (fraction: number, message: string) => void,
  ): Promise<BuiltSet> {
    const splitKey = threeWayKey(key);
    const rel = path.join('built', key);
    const dir = this.dataDir.abs(rel);
    if (fs.existsSync(path.join(dir, 'meta.json')) && fs.existsSync(path.join(dir, ID_SPACES))) {
      const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8')) as BuiltSet['meta'] & {
        inputs: BuiltSet['inputs'];
      };
      // asynchronous: a 10M-row split is gigabytes (past Node's 2 GiB file read) and must not hold the event loop
      const trainAll = await readShard(path.join(dir, 'train.shard'));
      const test = await readShard(path.join(dir, 'test.shard'));
      return {
        cached: true,
        key: splitKey,
        trainAll,
        timeOrdered: recipe.time !== null,
        ...carveValidation(trainAll, recipe.time !== null),
        test,
        inputs: meta.inputs,
        meta,
        dir: rel,
      };
    }
    let opened: { path: string; release(): void } | null = null;
    if (recipe.sampleVersion) {
      if (!this.opts.openSamples)
        throw new Error(`sample set ${recipe.sampleSetId} is registered by reference; this worker cannot read stores`);
      opened = await this.opts.openSamples(recipe, onProgress ? (f, m) => onProgress(0.1 * f, m) : undefined);
    }
    let built;
    try {
      built = await buildSamples(opened ? { ...req, samples: { ...req.samples, file: opened.path } } : req, {
        onProgress,
        ...(this.opts.memoryLimitBytes !== undefined ? { memoryLimitBytes: this.opts.memoryLimitBytes } : {}),
        ...(this.opts.threads !== undefined ? { threads: this.opts.threads } : {}),
      });
    } finally {
      opened?.release();
    }
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
    return {
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
}

interface Memo {
  key: string;
  set: BuiltSet;
  /** the request less its features: sample file, label, time, split, filter */
  source: string;
  /** each feature's definition (JSON), by name */
  defs: Map<string, string>;
}

function sourceOf(req: SampleBuildRequest): string {
  const { features: _features, ...rest } = req;
  return JSON.stringify(rest);
}

function featureDefs(req: SampleBuildRequest): Map<string, string> {
  return new Map(req.features.map((f) => [f.name, JSON.stringify(f)]));
}

/** The columns of `names` (in that order) of a dataset; labels, weights and keys are shared, not copied. */
export function projectDataset(ds: ColumnarDataset, names: string[]): ColumnarDataset {
  const order = names.filter((n) => ds.numericNames.includes(n));
  const at = new Map(ds.numericNames.map((n, j) => [n, j]));
  const src = order.map((n) => at.get(n)!);
  const w = ds.numericNames.length;
  const k = src.length;
  const numeric = new Float32Array(ds.rows * k);
  for (let i = 0; i < ds.rows; i++) {
    const o = i * w;
    const d = i * k;
    for (let c = 0; c < k; c++) numeric[d + c] = ds.numeric[o + src[c]];
  }
  const slotAt = new Map(ds.slots.map((s) => [s.name, s]));
  return {
    ...ds,
    numericNames: order,
    numeric,
    slots: names.filter((n) => slotAt.has(n)).map((n) => slotAt.get(n)!),
  };
}

/**
 * The built set of a subset of `set`'s features: what building them alone gives (each feature is
 * encoded on its own: same rows, splits, vocabularies and transforms), under the subset's own key,
 * so models trained on it are cached as if it had been built.
 */
export function projectBuilt(set: BuiltSet, names: string[], key: string): BuiltSet {
  const want = new Set(names);
  const meta = set.meta as { features?: { name: string }[] };
  return {
    ...set,
    key,
    cached: true,
    train: projectDataset(set.train, names),
    validation: projectDataset(set.validation, names),
    trainAll: projectDataset(set.trainAll, names),
    test: projectDataset(set.test, names),
    inputs: {
      numeric: names.filter((n) => set.inputs.numeric.includes(n)),
      slots: names.flatMap((n) => set.inputs.slots.filter((s) => s.name === n)),
    },
    meta: {
      ...set.meta,
      ...(meta.features ? { features: meta.features.filter((f) => want.has(f.name)) } : {}),
      projectedFrom: set.key,
    },
  };
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
