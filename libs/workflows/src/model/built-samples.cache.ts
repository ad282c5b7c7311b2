import fs from 'node:fs';
import { Logger } from '@nestjs/common';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { DataDir } from '@abacus/catalog';
import {
  isShardDataset,
  materialize,
  openShards,
  shardRanges,
  writeShard,
  type ColumnarDataset,
  type NativeShardHandle,
  type RuntimeData,
  type ShardDataset,
} from '@abacus/runtime';
import {
  concatSplits,
  describeBuild,
  encodeRanges,
  prepareBuild,
  sampleBuildKey,
  type BuildPlan,
  type EncodedSplit,
  type PlannedColumn,
  type SampleBuildRequest,
  type SlotIdSpace,
} from '@abacus/samples';
import type { ModelRecipe, ResolvedFeature } from './model-recipe.schema';
import { buildStarted } from './build-gate';
import { carveValidation, carveViews, crossFold, crossFoldKey, threeWayKey } from './validation-split';
import type { RowSource } from './in-order-fit';

export interface BuiltSet {
  /** the samples' key with the validation carve (models are cached under it) */
  key: string;
  cached: boolean;
  /**
   * the rows models fit on: the training split less the validation split. Every split is a view of
   * the built shard files (mapped, read natively, never loaded whole); `materialize` copies rows
   * into memory where JavaScript must read them
   */
  train: RuntimeData;
  /** decisions read this: the last part of the training time range (see validation-split.ts) */
  validation: RuntimeData;
  /** the whole training split (train + validation), for cross-fitted checks (see foldOf) */
  trainAll: RuntimeData;
  /** whether the rows are in time order (the recipe has a time column) */
  timeOrdered: boolean;
  /** reported results only */
  test: RuntimeData;
  inputs: { numeric: string[]; slots: { name: string; vocab: number }[] };
  meta: Record<string, unknown>;
  /** built/<key>, relative to the data directory */
  dir: string;
}

/**
 * A set being built here, for a fit whose first epoch reads its rows in order (training.firstEpoch
 * 'inOrder'): its key and inputs (known from the build's plan), its fitted rows as the build writes
 * them, and the whole set once built.
 */
export interface StreamedSet {
  streamed: true;
  /** the key the whole set will have (BuiltSet.key) */
  key: string;
  inputs: BuiltSet['inputs'];
  /** BuiltSet.train's rows: `ranges` waits until every shard holding them is written */
  train: RowSource;
  done: Promise<BuiltSet>;
}

/** What a build tells a streamed fit as it goes (see BuiltSamplesCache.stream). */
interface BuildHooks {
  /** ranges cut this many times smaller than one per encoding thread, so the first are written early */
  rangeWaves: number;
  onPlan(plan: BuildPlan, dir: string): void;
  /** a range's shard of `split`, written (its final name under `dir` of onPlan) */
  onShard(split: 'train' | 'test', file: string): void;
}

/** Ranges per encoding thread of a build a fit streams from (BuildHooks.rangeWaves). */
export const STREAM_RANGE_WAVES = 4;

const shardFile = (split: 'train' | 'test', index: number) => path.join(split, `${String(index).padStart(6, '0')}.shard`);

/** A shard of a streamed set not written yet: never handed to the runtime (StreamedSet.train.ranges waits for the real one). */
const PENDING_SHARD = Object.freeze({ json: '', rows: 0 }) as NativeShardHandle;

const ID_SPACES = 'id-spaces.json';
/** built/.used/<key> (without a store): its mtime is the set's last use, for pruneUnused. */
const USED = '.used';
const logger = new Logger('BuiltSamples');

/**
 * Built samples, cached on disk in the runtime's shard format under built/<key>/, the key being a
 * hash of (data version, feature definitions, split): trials that need the same samples build them
 * once, also across workers (written to a temporary directory, then renamed into place).
 */
export class BuiltSamplesCache {
  private base: Memo | null = null;
  private last: Memo | null = null;
  /** sets read through the store's cache (or built here), newest last: kept while they may be in use */
  private readonly pulled: (() => void)[] = [];
  /** sets built by this process whose upload to the store is under way, by key */
  private readonly storing = new Map<string, Promise<boolean>>();

  constructor(
    private readonly dataDir: DataDir,
    /**
     * threads: worker threads a build encodes its ranges on (see encodeRanges); openSamples: the
     * local copy of a set registered by reference (its recipe's sampleFile is a store URL), opened
     * only when the samples are built, not when they are cached
     */
    private readonly opts: {
      memoryLimitBytes?: number;
      threads?: number;
      /** the compiled build-thread script (tests hand a bundled one); default the one beside @abacus/samples */
      threadScript?: string | null;
      /** DuckDB's memory cap while building (MiB); it spills to the build's directory past it */
      duckdbMemoryMb?: number;
      /** rows per range at most, the unit of encoding and of shard files (fewer where that gives every thread one) */
      rangeRows?: number;
      /** bytes of joined rows one sort orders at most (see BuildSamplesOptions.joinChunkBytes) */
      joinChunkBytes?: number;
      /** awaited with each range (its index, of `ranges`) before its shards are written: tests hold a build there */
      beforeRangeWrite?: (index: number, ranges: number) => Promise<void>;
      openSamples?: (
        recipe: ModelRecipe,
        onProgress?: (fraction: number, message: string) => void,
      ) => Promise<{ path: string; release(): void }>;
    } = {},
  ) {}

  /**
   * Keeps the cache links of the last few sets read from the store (a trial may still read the one
   * it has when the next is opened: concurrent trials of one worker), releasing older ones; mapped
   * shards stay readable after their links go.
   */
  private holdPulled(release: () => void): void {
    this.pulled.push(release);
    while (this.pulled.length > 4) this.pulled.shift()!();
  }

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
        source:
          f.source.kind === 'table'
            ? { ...f.source, file: this.dataDir.abs(f.source.file) }
            : f.source.kind === 'expression' && f.source.tables
              ? {
                ...f.source,
                tables: Object.fromEntries(Object.entries(f.source.tables).map(([n, t]) => [n, { ...t, file: this.dataDir.abs(t.file) }])),
              }
              : f.source,
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
    hooks?: BuildHooks,
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
        (fs.existsSync(this.dataDir.abs(path.join('built', fullKey, ID_SPACES))) ||
          (!!this.dataDir.shared && (await this.dataDir.exists(path.join('built', fullKey)))))
      ) {
        await this.get(recipe, recipe.features, onProgress);
        whole = this.base;
      }
    }
    if (whole) {
      // the subset's rows are the whole set's, split the same way (by blocks or not: in its key)
      const set = projectBuilt(
        whole.set,
        features.map((f) => f.name),
        threeWayKey(key, whole.set.key === threeWayKey(whole.key, true)),
      );
      this.last = { key, set, source, defs };
      return set;
    }
    const set = await this.load(req, key, recipe, onProgress, hooks);
    // keep the last whole set (subsets are cut from it) and the last subset: trials of one experiment follow each other
    this.base = { key, set, source, defs };
    this.last = null;
    return set;
  }

  /**
   * The samples of `recipe` (or of `features` of it) for a fit with an in-order first epoch: where no
   * worker has built them yet, a StreamedSet as soon as the build's plan is made (the fitted rows are
   * handed over shard by shard as the ranges are written, the ranges cut STREAM_RANGE_WAVES times
   * smaller so that the first are written early); otherwise, and where the split would copy rows
   * (a small set without a time column), the built set as get gives it.
   */
  async stream(
    recipe: ModelRecipe,
    features: ResolvedFeature[] = recipe.features,
    onProgress?: (fraction: number, message: string) => void,
  ): Promise<BuiltSet | StreamedSet> {
    let planned!: (s: StreamedSet) => void;
    const early = new Promise<StreamedSet>((resolve) => (planned = resolve));
    const opened = new Map<string, Promise<NativeShardHandle>>();
    const waiting = new Map<string, (h: Promise<NativeShardHandle>) => void>();
    let schema: Pick<ShardDataset, 'numericNames' | 'slots' | 'keys' | 'hasWeights'> | null = null;
    const handleOf = (file: string): Promise<NativeShardHandle> => {
      let h = opened.get(file);
      if (!h) {
        h = new Promise<NativeShardHandle>((resolve) => waiting.set(file, (p) => resolve(p)));
        opened.set(file, h);
      }
      return h;
    };
    // (the hooks below are called once the build is under way, after `done` below is set)
    const hooks: BuildHooks = {
      rangeWaves: STREAM_RANGE_WAVES,
      onPlan: (plan, dir) => {
        const { inputs } = describeBuild(plan, plan.columns.map(() => 0), { train: 0, test: 0 });
        schema = {
          numericNames: inputs.numeric,
          slots: inputs.slots.map((x) => ({ name: x.name, vocab: x.vocab })),
          keys: plan.groupName ? [plan.groupName] : [],
          hasWeights: false,
        };
        // the training split as it will be: one shard per range with training rows, in range order
        const shards: ShardDataset['shards'] = plan.ranges.flatMap((r, i) =>
          r.train > 0
            ? [{ path: path.join(dir, shardFile('train', i)), rows: r.train, handle: PENDING_SHARD }]
            : [],
        );
        const trainAll: ShardDataset = { kind: 'shards', rows: plan.trainRows, ...schema, shards };
        const split = shards.length ? carveViews(trainAll, recipe.time !== null) : null;
        if (!split || !isShardDataset(split.train)) return; // the split copies rows: the fit waits for the whole set
        const train = split.train;
        planned({
          streamed: true,
          key: threeWayKey(sampleBuildKey(this.request(recipe, features)), split.blocks === true),
          inputs,
          train: {
            rows: train.rows,
            ranges: async (ranges) => {
              const view = shardRanges(train, ranges);
              const ready = Promise.all(view.shards.map((x) => handleOf(x.path))).then((handles) => ({
                ...view,
                shards: view.shards.map((x, k) => ({ ...x, handle: handles[k]! })),
              }));
              // the whole set, should it be there first (its rows are the same)
              const whole = done.then((set) => shardRanges(set.train as ShardDataset, ranges));
              return Promise.race([ready, whole]);
            },
          },
          done,
        });
      },
      onShard: (split, file) => {
        if (split !== 'train') return;
        const h = openShards([file], { verify: false }).then((ds) => {
          const want = schema!;
          if (
            ds.numericNames.join() !== want.numericNames.join() ||
            ds.slots.map((x) => `${x.name}:${x.vocab}`).join() !== want.slots.map((x) => `${x.name}:${x.vocab}`).join() ||
            ds.keys.join() !== want.keys.join() ||
            ds.hasWeights !== want.hasWeights
          )
            throw new Error(`shard ${path.basename(file)} is not laid out as the build's plan says`);
          return ds.shards[0]!.handle;
        });
        h.catch(() => undefined); // awaited by the fit, if it reads this shard
        const w = waiting.get(file);
        if (w) {
          waiting.delete(file);
          w(h);
        } else opened.set(file, h);
      },
    };
    const done = this.get(recipe, features, onProgress, hooks);
    // a fit that fails first leaves the build running: its failure is then nobody's to hear
    done.catch(() => undefined);
    return Promise.race([early, done]);
  }

  /**
   * Without a deployment store, removes the built sets of the data directory that no trial has used
   * for `maxAgeMs` (their last use is noted on every use; a set built before that was noted counts from
   * when it was built), so the data directory does not keep every set ever built. A process that has
   * one open keeps reading it (the files are renamed aside, then removed); a later use builds it again.
   * With a store nothing is removed here: built sets live in the store and the host's bounded cache.
   */
  pruneUnused(maxAgeMs: number): string[] {
    if (this.dataDir.shared || !(maxAgeMs > 0)) return [];
    const root = this.dataDir.abs('built');
    if (!fs.existsSync(root)) return [];
    const removed: string[] = [];
    for (const e of fs.readdirSync(root, { withFileTypes: true })) {
      if (!e.isDirectory() || e.name.startsWith('.')) continue; // builds in progress, or being removed
      const dir = path.join(root, e.name);
      const marker = path.join(root, USED, e.name);
      const used =
        fs.statSync(marker, { throwIfNoEntry: false })?.mtimeMs ??
        fs.statSync(path.join(dir, 'meta.json'), { throwIfNoEntry: false })?.mtimeMs;
      if (used === undefined || Date.now() - used < maxAgeMs) continue;
      const aside = path.join(root, `.${e.name}.unused-${process.pid}-${randomBytes(4).toString('hex')}`);
      try {
        fs.renameSync(dir, aside);
      } catch {
        continue; // removed by another process meanwhile
      }
      fs.rmSync(aside, { recursive: true, force: true });
      fs.rmSync(marker, { force: true });
      removed.push(e.name);
    }
    if (removed.length)
      logger.log(`removed ${removed.length} built sample set(s) unused for ${Math.round(maxAgeMs / 86_400_000)} day(s)`);
    return removed;
  }

  /**
   * The samples of `recipe` (or of `features` of it) built on disk, building them if no worker has:
   * their directory (relative to the data directory), meta.json and whether they were there already.
   * Holds no samples in memory.
   */
  async ensureBuilt(
    recipe: ModelRecipe,
    features: ResolvedFeature[] = recipe.features,
    onProgress?: (fraction: number, message: string) => void,
    request?: SampleBuildRequest,
    hooks?: BuildHooks,
  ): Promise<{ key: string; dir: string; meta: BuiltMeta; cached: boolean; release?: () => void }> {
    const req = request ?? this.request(recipe, features);
    const key = sampleBuildKey(req);
    const rel = path.join('built', key);
    const dir = this.dataDir.abs(rel);
    const local = fs.existsSync(path.join(dir, 'meta.json')) && fs.existsSync(path.join(dir, ID_SPACES));
    if (!this.dataDir.shared) {
      if (local) {
        touchLastUse(dir);
        return { key, dir: rel, meta: readMeta(dir), cached: true };
      }
      const meta = await this.build(req, key, recipe, onProgress, hooks);
      touchLastUse(dir);
      return { key, dir: rel, meta, cached: false };
    }
    // a deployment store: built sets live there (every host reads one build), read through this host's cache
    const storing = this.storing.get(key);
    if (storing && local) {
      // built here a moment ago and still being stored: this process reads its own copy
      await storing.catch(() => undefined);
      if (fs.existsSync(path.join(dir, ID_SPACES))) return { key, dir: rel, meta: readMeta(dir), cached: true };
    }
    if (local) await this.dataDir.push(rel, { adopt: true });
    const pulled = await this.dataDir.pullCached(rel, onProgress ? (f, m) => onProgress(f, m) : undefined);
    if (pulled) {
      logger.log(
        pulled.fetchedBytes > 0
          ? `built samples ${key}: fetched ${(pulled.fetchedBytes / 2 ** 20).toFixed(1)} MiB from ${this.dataDir.shared.url}`
          : `built samples ${key}: in this host's cache`,
      );
      return { key, dir: pulled.dir, meta: readMeta(this.dataDir.abs(pulled.dir)), cached: true, release: pulled.release };
    }
    const meta = await this.build(req, key, recipe, onProgress, hooks);
    // this trial trains from the local copy at once; the store gets it meanwhile (other hosts find it
    // once its manifest is written), and when this process is done with the set its files move into
    // the host's cache (or go, when another host stored the same set first)
    const url = this.dataDir.shared.url;
    const pushing = this.dataDir.push(rel).then(
      (stored) => {
        logger.log(
          stored
            ? `built samples ${key}: built here and stored in ${url}`
            : `built samples ${key}: built here, another host stored it first`,
        );
        return stored;
      },
      (err: unknown) => {
        logger.warn(`built samples ${key}: built here, storing failed (${(err as Error).message}); other hosts build their own`);
        throw err;
      },
    );
    this.storing.set(key, pushing);
    const release = () => {
      void pushing
        .then((stored) => (stored ? this.dataDir.adoptPushed(rel) : this.dataDir.remove(rel)))
        .catch(() => undefined)
        .finally(() => this.storing.delete(key));
    };
    return { key, dir: rel, meta, cached: false, release };
  }

  private async load(
    req: SampleBuildRequest,
    key: string,
    recipe: ModelRecipe,
    onProgress?: (fraction: number, message: string) => void,
    hooks?: BuildHooks,
  ): Promise<BuiltSet> {
    const {
      dir: rel,
      meta,
      cached,
      release,
    } = await this.ensureBuilt(
      recipe,
      req.features.length === recipe.features.length ? recipe.features : undefined,
      onProgress,
      req,
      hooks,
    );
    const dir = this.dataDir.abs(rel);
    // mapped, checksums verified natively off the event loop: nothing of the samples is held in memory
    const trainAll = await openShards(meta.shards.train.map((s) => path.join(dir, s.file)));
    const test = await openShards(meta.shards.test.map((s) => path.join(dir, s.file)));
    if (release) this.holdPulled(release);
    const { blocks, ...split } = await carveValidation(trainAll, recipe.time !== null);
    return {
      cached,
      key: threeWayKey(key, blocks === true),
      trainAll,
      timeOrdered: recipe.time !== null,
      ...split,
      test,
      inputs: meta.inputs,
      meta,
      dir: rel,
    };
  }

  /**
   * Builds the samples into built/<key>/ as shard files of one range each (train/ and test/), never
   * holding the whole set: DuckDB reads, orders and joins within its memory cap (spilling to disk),
   * the ranges are encoded on threads and each written as it comes. Written to a temporary directory,
   * then renamed into place, so a crash leaves nothing half-built under the key.
   */
  private async build(
    req: SampleBuildRequest,
    key: string,
    recipe: ModelRecipe,
    onProgress?: (fraction: number, message: string) => void,
    hooks?: BuildHooks,
  ): Promise<BuiltMeta> {
    const done = buildStarted();
    try {
      return await this.buildNow(req, key, recipe, onProgress, hooks);
    } finally {
      done();
    }
  }

  /** The sample set's files on this host while `fn` runs (a set by reference: opened through the store). */
  async withSamplesFile<T>(recipe: ModelRecipe, fn: (file: string) => Promise<T>): Promise<T> {
    let opened: { path: string; release(): void } | null = null;
    if (recipe.sampleVersion) {
      if (this.opts.openSamples) opened = await this.opts.openSamples(recipe);
      else if (!recipe.sampleFile.includes('://'))
        opened = { path: await this.dataDir.pull(recipe.sampleFile), release: () => undefined };
      else throw new Error(`sample set ${recipe.sampleSetId} is registered by reference; this worker cannot read stores`);
    }
    try {
      return await fn(opened ? opened.path : this.dataDir.abs(recipe.sampleFile));
    } finally {
      opened?.release();
    }
  }

  /**
   * The training split of `features` built in memory, nothing written or cached: for reading some of
   * its rows once (discover's screen reads each batch of candidates so). Rows are in the order of the
   * training split of every build of the recipe (trainAll); with `keepTrainRows` (positions in that
   * order, ascending) only those rows, in that order: the features are computed over every row, only
   * the kept rows are encoded; `withTimes`: each row's time too (EncodedSplit.times).
   */
  async buildTrainInMemory(
    recipe: ModelRecipe,
    features: ResolvedFeature[],
    onProgress?: (fraction: number, message: string) => void,
    keepTrainRows?: Uint32Array,
    withTimes = false,
  ): Promise<{ train: EncodedSplit; columns: PlannedColumn[] }> {
    const req = this.request(recipe, features);
    const work = this.dataDir.abs(path.join('built', `.mem-${randomBytes(4).toString('hex')}`));
    const done = buildStarted();
    try {
      await this.pullTables(features);
      return await this.withSamplesFile(recipe, async (file) => {
        const plan = await prepareBuild(recipe.sampleVersion ? { ...req, samples: { ...req.samples, file } } : req, work, {
          ...(this.opts.duckdbMemoryMb !== undefined ? { duckdbMemoryMb: this.opts.duckdbMemoryMb } : {}),
          ...(this.opts.rangeRows !== undefined ? { rangeRows: this.opts.rangeRows } : {}),
          ...(this.opts.threads !== undefined ? { rangeThreads: this.opts.threads } : {}),
          ...(keepTrainRows ? { keepTrainRows } : {}),
          ...(withTimes ? { withTimes } : {}),
          onProgress: (f, m) => onProgress?.(0.5 * f, m),
        });
        const parts: EncodedSplit[] = [];
        const index: number[] = [];
        let n = 0;
        await encodeRanges(plan, {
          ...(this.opts.threads !== undefined ? { threads: this.opts.threads } : {}),
          ...(this.opts.threadScript !== undefined ? { threadScript: this.opts.threadScript } : {}),
          ...(this.opts.duckdbMemoryMb !== undefined ? { duckdbMemoryMb: this.opts.duckdbMemoryMb } : {}),
          onRange: async (r) => {
            parts.push(r.train);
            index.push(r.index);
            onProgress?.(0.5 + 0.5 * (++n / plan.ranges.length), 'encoding');
          },
        });
        const order = index.map((_, k) => k).sort((a, b) => index[a] - index[b]);
        const train = concatSplits(order.map((k) => parts[k]).filter((p) => p.rows > 0));
        return { train, columns: plan.columns };
      });
    } finally {
      done();
      fs.rmSync(work, { recursive: true, force: true });
    }
  }

  /** The feature tables `features` join (table features and those expressions read), from the store onto this host. */
  private async pullTables(features: ResolvedFeature[]): Promise<void> {
    const files = new Set<string>();
    for (const f of features) {
      if (f.source.kind === 'table') files.add(f.source.file);
      if (f.source.kind === 'expression') for (const t of Object.values(f.source.tables ?? {})) files.add(t.file);
    }
    for (const file of files) await this.dataDir.pull(file);
  }

  private async buildNow(
    req: SampleBuildRequest,
    key: string,
    recipe: ModelRecipe,
    onProgress?: (fraction: number, message: string) => void,
    hooks?: BuildHooks,
  ): Promise<BuiltMeta> {
    const dir = this.dataDir.abs(path.join('built', key));
    let opened: { path: string; release(): void } | null = null;
    if (recipe.sampleVersion) {
      if (this.opts.openSamples)
        opened = await this.opts.openSamples(recipe, onProgress ? (f, m) => onProgress(0.1 * f, m) : undefined);
      else if (!recipe.sampleFile.includes('://'))
        opened = { path: await this.dataDir.pull(recipe.sampleFile), release: () => undefined };
      else throw new Error(`sample set ${recipe.sampleSetId} is registered by reference; this worker cannot read stores`);
    }
    // feature tables another host took: from the store into this host's data directory
    await this.pullTables(recipe.features);
    const tmp = this.dataDir.abs(path.join('built', `.${key}.${randomBytes(4).toString('hex')}`));
    const t0 = performance.now();
    try {
      fs.mkdirSync(path.join(tmp, 'train'), { recursive: true });
      fs.mkdirSync(path.join(tmp, 'test'), { recursive: true });
      const plan = await prepareBuild(
        opened ? { ...req, samples: { ...req.samples, file: opened.path } } : req,
        path.join(tmp, '.work'),
        {
          ...(this.opts.memoryLimitBytes !== undefined ? { memoryLimitBytes: this.opts.memoryLimitBytes } : {}),
          ...(this.opts.duckdbMemoryMb !== undefined ? { duckdbMemoryMb: this.opts.duckdbMemoryMb } : {}),
          ...(this.opts.rangeRows !== undefined ? { rangeRows: this.opts.rangeRows } : {}),
          ...(this.opts.threads !== undefined || hooks
            ? { rangeThreads: (this.opts.threads ?? 1) * (hooks?.rangeWaves ?? 1) }
            : {}),
          ...(this.opts.joinChunkBytes !== undefined ? { joinChunkBytes: this.opts.joinChunkBytes } : {}),
          onProgress: (f, m) => onProgress?.(0.1 + 0.9 * f, m),
        },
      );
      hooks?.onPlan(plan, tmp);
      const t1 = performance.now();
      const vocab = Object.fromEntries(plan.columns.filter((c) => c.input === 'slot').map((c) => [c.name, c.vocab!]));
      const shards: BuiltMeta['shards'] = { train: [], test: [] };
      const missing = plan.columns.map(() => 0);
      const positives = { train: 0, test: 0 };
      let done = 0;
      let encodeMs = 0;
      let fetchMs = 0;
      await encodeRanges(plan, {
        ...(this.opts.threads !== undefined ? { threads: this.opts.threads } : {}),
        ...(this.opts.threadScript !== undefined ? { threadScript: this.opts.threadScript } : {}),
        ...(this.opts.duckdbMemoryMb !== undefined ? { duckdbMemoryMb: this.opts.duckdbMemoryMb } : {}),
        onRange: async (r) => {
          await this.opts.beforeRangeWrite?.(r.index, plan.ranges.length);
          for (const s of ['train', 'test'] as const) {
            const split = r[s];
            if (split.rows === 0) continue;
            const file = shardFile(s, r.index);
            await writeShard(path.join(tmp, file), split, { vocab });
            shards[s].push({ index: r.index, file, rows: split.rows, nnz: split.slots.map((x) => x.offsets[split.rows]) });
            hooks?.onShard(s, path.join(tmp, file));
          }
          r.missing.forEach((m, f) => (missing[f] += m));
          positives.train += r.positives.train;
          positives.test += r.positives.test;
          encodeMs += r.encodeMs;
          fetchMs += r.fetchMs;
          done++;
          onProgress?.(0.1 + 0.9 * (0.35 + 0.6 * (done / plan.ranges.length)), 'encoding');
        },
      });
      fs.rmSync(path.join(tmp, '.work'), { recursive: true, force: true });
      // the ranges may have been read straight from the opened files: released once every range is in
      opened?.release();
      opened = null;
      for (const s of ['train', 'test'] as const) shards[s].sort((a, b) => a.index - b.index);
      const described = describeBuild(plan, missing, positives);
      const meta: BuiltMeta = {
        inputs: described.inputs,
        features: described.features,
        split: described.split,
        timings: {
          readMs: plan.timings.readMs,
          joinMs: plan.timings.joinMs + plan.timings.statsMs,
          orderMs: plan.timings.orderMs ?? 0,
          scanMs: plan.timings.scanMs ?? 0,
          enumMs: plan.timings.enumMs ?? 0,
          rangesMs: plan.timings.rangesMs ?? 0,
          encodeMs: performance.now() - t1,
          encodeCpuMs: encodeMs,
          // of encodeCpuMs: the ranges' threads waiting on DuckDB (reading the files), the rest is encoding
          encodeFetchMs: fetchMs,
          wallMs: performance.now() - t0,
          ranges: plan.ranges.length,
          // sorts the join was ordered by (runs of files), and whether its working table was compressed
          joinRuns: plan.timings.joinRuns ?? 1,
          joinCompressed: plan.timings.joinCompressed ? 1 : 0,
          // 1: the ranges were read straight from the sample files (no joined copy written)
          directRanges: plan.timings.direct ? 1 : 0,
        },
        shards,
      };
      fs.writeFileSync(path.join(tmp, 'meta.json'), JSON.stringify(meta, null, 2));
      fs.writeFileSync(path.join(tmp, ID_SPACES), JSON.stringify(described.idSpaces));
      try {
        fs.renameSync(tmp, dir);
      } catch {
        // another worker built the same key first: theirs is the same set
        if (!fs.existsSync(path.join(dir, ID_SPACES))) throw new Error(`cannot move the built samples into ${dir}`);
        fs.rmSync(tmp, { recursive: true, force: true });
        return readMeta(dir);
      }
      return meta;
    } catch (err) {
      fs.rmSync(tmp, { recursive: true, force: true });
      throw err;
    } finally {
      opened?.release();
    }
  }
}

function readMeta(dir: string): BuiltMeta {
  return JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8')) as BuiltMeta;
}

/** meta.json of a built set */
export interface BuiltMeta extends Record<string, unknown> {
  inputs: BuiltSet['inputs'];
  features: unknown[];
  split: unknown;
  timings: Record<string, number>;
  /** every range's train and test shard (relative to the built directory), in row order */
  shards: Record<'train' | 'test', { index: number; file: string; rows: number; nnz: number[] }[]>;
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

/**
 * The columns of `names` (in that order) of a dataset; labels, weights and keys are shared, not copied.
 * Shards are the same view: the native code reads the columns a model names from the shards' own.
 */
export function projectDataset<T extends RuntimeData>(ds: T, names: string[]): T {
  if (isShardDataset(ds)) return ds;
  const cd = ds as ColumnarDataset;
  const order = names.filter((n) => cd.numericNames.includes(n));
  const at = new Map(cd.numericNames.map((n, j) => [n, j]));
  const src = order.map((n) => at.get(n)!);
  const w = cd.numericNames.length;
  const k = src.length;
  const numeric = new Float32Array(cd.rows * k);
  for (let i = 0; i < cd.rows; i++) {
    const o = i * w;
    const d = i * k;
    for (let c = 0; c < k; c++) numeric[d + c] = cd.numeric[o + src[c]];
  }
  const slotAt = new Map(cd.slots.map((s) => [s.name, s]));
  return {
    ...cd,
    numericNames: order,
    numeric,
    slots: names.filter((n) => slotAt.has(n)).map((n) => slotAt.get(n)!),
  } as T;
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

/** A built set whose splits are all in memory (see inMemory). */
export type MemoryBuiltSet = BuiltSet & {
  train: ColumnarDataset;
  validation: ColumnarDataset;
  trainAll: ColumnarDataset;
  test: ColumnarDataset;
};

/**
 * The built set with every split copied into memory, for code that reads the rows in JavaScript
 * (multiply's unions): its memory is that of the set.
 */
export async function inMemory(set: BuiltSet): Promise<MemoryBuiltSet> {
  return {
    ...set,
    train: await materialize(set.train),
    validation: await materialize(set.validation),
    trainAll: await materialize(set.trainAll),
    test: await materialize(set.test),
  };
}

/**
 * Fold `fold` of `folds` of a built set's training range as its validation split, the rest fitted on
 * (validation-split.ts: crossFold); the key names the fold, so models trained on it are cached apart.
 */
export async function foldOf(built: BuiltSet, fold: number, folds: number): Promise<BuiltSet> {
  // a split by blocks is in built.key already (threeWayKey), and so in the fold's key
  const { train, validation } = await crossFold(built.trainAll, fold, folds, built.timeOrdered);
  return { ...built, key: crossFoldKey(built.key, fold, folds), train, validation };
}

/** What the ids of each slot of a built set stand for (see SlotIdSpace), by slot name. */
export function readIdSpaces(dataDir: DataDir, built: BuiltSet): Record<string, SlotIdSpace> {
  return JSON.parse(fs.readFileSync(dataDir.abs(path.join(built.dir, ID_SPACES)), 'utf8')) as Record<string, SlotIdSpace>;
}

/** Notes a use of the built set in `dir` (built/<key>; see pruneUnused). */
function touchLastUse(dir: string): void {
  const marker = path.join(path.dirname(dir), USED, path.basename(dir));
  const now = new Date();
  try {
    fs.utimesSync(marker, now, now);
  } catch {
    fs.mkdirSync(path.dirname(marker), { recursive: true });
    fs.writeFileSync(marker, '');
  }
}
