import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import type { DataDir } from '@abacus/catalog';
import {
  RuntimeModel,
  labelsOf,
  materialize,
  resolveBackend,
  type BackendChoice,
  type EvaluationResult,
  type ModelSpecInput,
  type RuntimeData,
} from '@abacus/runtime';
import type { BuiltSet, StreamedSet } from './built-samples.cache';
import { fitInOrder, isRowSource, rowSourceOf, type RowSource } from './in-order-fit';
import { switchOff } from './dataset-subset';
import type { Architecture, Training } from './model-recipe.schema';
import { TrainingDivergedError } from './training-diverged.error';

export interface TrainedModel {
  key: string;
  /** models/<key>, relative to the data directory */
  dir: string;
  cached: boolean;
  backend: string;
  model: RuntimeModel;
  /** test metrics at the top (the reported numbers); `validation`: the same on the validation split (for decisions) */
  metrics: EvaluationResult & {
    validation: EvaluationResult;
    trainMs: number;
    steps: number;
    epochs: number;
    stoppedEarly: boolean;
    bestEpoch: number;
    samplesPerSecond: number;
    /** ms of the test and validation forward passes after training, and of writing the model (fits trained here) */
    evalMs?: number;
    saveMs?: number;
    /** where trainMs went (fits trained here): creating and initialising the model, waiting for a thread,
     * before the first step (split, normalisation, data to the device), steps, per-epoch validation passes */
    trainPhases?: { createMs: number; queuedMs: number; setupMs: number; stepsMs: number; validationMs: number };
    /** cuda, when the embedding tables (with their optimizer state) took more than the device budget:
     * they trained in host memory through a device cache of `cacheRows` of their `tableRows` rows;
     * the rows its fills found cached (hitRate), read in (loads) and wrote back (writebacks) */
    embeddingTables?: { placement: 'host memory'; cacheRows: number; tableRows: number; hitRate: number; loads: number; writebacks: number };
  };
  /** test predictions and labels */
  predictions: Float32Array;
  labels: Float32Array;
  /** validation predictions and labels */
  validation: { predictions: Float32Array; labels: Float32Array };
  /** what the model's initialisation did (e.g. rows carried from a shared embedding), when it had one */
  init?: unknown;
}

/** A fine-tune's validation metrics and where its time went (ms). */
export interface FineTuneResult {
  validation: EvaluationResult;
  loadMs: number;
  trainMs: number;
  evalMs: number;
  steps: number;
  queuedMs: number;
  setupMs: number;
}

/** A model's starting point other than random: applied after creation, before training. */
export interface ModelInit {
  /** identifies the initialisation in the model's cache key */
  key: string;
  apply(model: RuntimeModel): Promise<unknown>;
}

export interface TrainerOptions {
  backend: BackendChoice;
  /** 0 = all cores */
  threads: number;
  /**
   * threads of a host (CPU) fit that is one of a batch of independent fits (TrainContextOptions.batch:
   * a scratch check, the confirm's seeds, add's leave-one-in, divide's tiers), run several at once
   * (DevicePool.hostFits); 0 or unset = `threads`. Two one-thread fits at once trained 1.3-1.5x the rows
   * a second of one two-thread fit after another on the 2-core dev machine.
   */
  batchThreads?: number;
}

export interface TrainContextOptions {
  signal?: AbortSignal;
  onProgress?: (fraction: number, message: string) => void;
  /** CUDA device of this trial (see DevicePool) */
  device?: number;
  /**
   * one of a batch of independent fits (onDevices): off the GPU it trains on the trainer's batchThreads.
   * Whether a fit is a batch's decides its thread count, and so (in the last digits) its numbers:
   * the same fit is always asked for the same way, so it trains the same wherever it runs
   */
  batch?: boolean;
  /** training.firstEpoch 'inOrder': called as each chunk of the first epoch starts */
  onChunk?: (chunk: number, chunks: number) => void;
}

/**
 * Models kept for the warm checks of one trained model: one per fit in flight on a device, each
 * restored from the trained model's state in place before a fit (copyStateFrom: on the GPU device
 * to device) and its inputs switched off in place (switchOff), so a fit loads no checkpoint and
 * copies no data. A lane last used with the same `affinity` (e.g. the seed, whose training rows it
 * holds on the GPU) is preferred. Only for backends that can do both (cpu, cuda): see inPlace.
 */
export class FineTuneLanes {
  private readonly idle = new Map<string, { model: RuntimeModel; affinity: unknown }[]>();
  /** lane models created (one per fit that ran at the same time as others on a device) */
  created = 0;

  constructor(
    readonly base: TrainedModel,
    private readonly create: (device: number | undefined) => RuntimeModel,
  ) {}

  async use<T>(device: number | undefined, affinity: unknown, fn: (model: RuntimeModel) => Promise<T>): Promise<T> {
    const key = String(device ?? 'host');
    const free = this.idle.get(key) ?? [];
    this.idle.set(key, free);
    const at = free.findIndex((l) => l.affinity === affinity);
    const lane = at >= 0 ? free.splice(at, 1)[0] : free.pop();
    const model = lane?.model ?? this.create(device);
    if (!lane) this.created += 1;
    let ok = false;
    try {
      const r = await fn(model);
      ok = true;
      return r;
    } finally {
      // a lane whose fit failed (cancelled, diverged, a device fault) is not reused
      if (ok) free.push({ model, affinity });
    }
  }
}

/**
 * Trains a model on built samples, or reuses an identical earlier training: checkpoints are cached
 * under models/<hash of (samples, model spec, training options, backend)>.
 */
export class ModelTrainer {
  constructor(
    private readonly dataDir: DataDir,
    private readonly opts: TrainerOptions,
  ) {}

  spec(built: Pick<BuiltSet, 'inputs'>, arch: Architecture, training: Training): ModelSpecInput {
    return {
      numeric: built.inputs.numeric,
      slots: built.inputs.slots,
      pooling: arch.pooling,
      embeddingDim: arch.embeddingDim,
      wide: arch.wide,
      hidden: arch.hidden,
      optimizer: {
        dense: { kind: 'adam', lr: training.learningRate },
        sparse: { kind: training.sparseOptimizer, lr: training.sparseLearningRate },
      },
      seed: training.seed,
    };
  }

  private createOptions(device?: number, batch = false) {
    const threads = device === undefined && batch && this.opts.batchThreads ? this.opts.batchThreads : this.opts.threads;
    return {
      backend: this.opts.backend,
      ...(threads > 0 ? { threads } : {}),
      ...(device !== undefined ? { device } : {}),
    };
  }

  key(built: Pick<BuiltSet, 'key' | 'inputs'>, arch: Architecture, training: Training): string {
    const backend = resolveBackend(this.opts.backend);
    // the default first epoch is left out, so models trained before the option existed keep their keys
    const { firstEpoch, ...rest } = training;
    const opts = firstEpoch === 'shuffled' ? rest : training;
    return createHash('sha256')
      .update(JSON.stringify({ v: 1, samples: built.key, spec: this.spec(built, arch, training), training: opts, backend }))
      .digest('hex')
      .slice(0, 32);
  }

  /**
   * `built` may be a set still being built (BuiltSamplesCache.stream, training.firstEpoch 'inOrder'):
   * the first epoch then reads its rows as they are written.
   */
  async trainOrReuse(
    built: BuiltSet | StreamedSet,
    arch: Architecture,
    training: Training,
    ctx: TrainContextOptions = {},
    init?: ModelInit,
  ): Promise<TrainedModel> {
    const base = this.key(built, arch, training);
    const key = init
      ? createHash('sha256')
          .update(JSON.stringify({ v: 1, base, init: init.key }))
          .digest('hex')
          .slice(0, 32)
      : base;
    return this.trainPhases(key, built, [built.train], arch, training, ctx, { init });
  }

  /**
   * Trains on `pretrain` first, then continues the same model (weights and optimizer state) on
   * `finetune`; both are row subsets of `built.train` in its encoding, so ids mean the same in both.
   * `tag` names the split (it is part of the cache key).
   */
  async pretrainFinetuneOrReuse(
    built: BuiltSet,
    pretrain: RuntimeData,
    finetune: RuntimeData,
    tag: string,
    arch: Architecture,
    training: Training,
    ctx: TrainContextOptions = {},
    opts: { freezeEmbeddings?: boolean } = {},
  ): Promise<TrainedModel> {
    const freeze = opts.freezeEmbeddings === true;
    const key = createHash('sha256')
      .update(
        JSON.stringify({ v: 1, base: this.key(built, arch, training), pretrainFinetune: tag, ...(freeze ? { freeze } : {}) }),
      )
      .digest('hex')
      .slice(0, 32);
    return this.trainPhases(key, built, [pretrain, finetune], arch, training, ctx, { freezeAfterFirstPhase: freeze });
  }

  /**
   * The training and validation rows of `built` with some inputs of a trained model switched off
   * (see switchOff: numeric inputs held at the model's normalization mean, slots as empty bags), for
   * fineTune; made once per input set, shared by its seeds.
   */
  async switchedOff(
    base: TrainedModel,
    built: BuiltSet,
    off: string[],
  ): Promise<{ train: RuntimeData; validation: RuntimeData }> {
    return {
      train: await this.switchedOffRows(base, built.train, off),
      validation: await this.switchedOffRows(base, built.validation, off),
    };
  }

  /**
   * Any rows in the trained model's encoding (a split, or a row sample of one) with `off` switched off,
   * as switchedOff. Nothing off: the rows as they are (a view of shards stays one); else a copy.
   */
  async switchedOffRows(base: TrainedModel, rows: RuntimeData, off: string[]): Promise<RuntimeData> {
    const spec = base.model.spec;
    const unknown = off.filter((n) => !spec.numeric.includes(n) && !spec.slots.some((s) => s.name === n));
    if (unknown.length) throw new Error(`switchedOff: ${unknown.join(', ')} not inputs of the model`);
    if (off.length === 0) return rows;
    return switchOff(await materialize(rows), off, this.heldValue(base.model));
  }

  /** A numeric input's value when switched off: the model's normalization mean (read once per model). */
  private readonly held = new WeakMap<RuntimeModel, (name: string) => number>();
  private heldValue(model: RuntimeModel): (name: string) => number {
    let f = this.held.get(model);
    if (!f) {
      // tensors() copies every parameter (embedding tables included) off the device: once, not per check
      const mean = model.tensors().find((t) => t.name === 'normalization.mean')?.data;
      const at = new Map(model.spec.numeric.map((n, j) => [n, j]));
      f = (name: string) => mean?.[at.get(name) ?? -1] ?? 0;
      this.held.set(model, f);
    }
    return f;
  }

  /** Lanes for fine-tunes of `base` without reloading it (null when its backend cannot: tfjs). */
  fineTuneLanes(base: TrainedModel): FineTuneLanes | null {
    if (!base.model.inPlace) return null;
    // a warm check trains on every thread, one after another on the CPU (onDevices' hostFits 1 in the
    // prune): its few hundred steps used two threads well, where two one-thread checks at once did not
    return new FineTuneLanes(base, (device) => RuntimeModel.create(base.model.spec, this.createOptions(device)));
  }

  /**
   * A cheap stand-in for retraining without some inputs: a copy of a trained model (weights and
   * optimizer state: from `ctx.lanes`, restored in place; else from its checkpoint) fine-tuned for `epochs` epoch(s), at most `maxSteps` steps, on `data.train` (the
   * inputs switched off: switchedOff, or `data.off` switched off in the model itself over the rows as
   * they are), then evaluated on `data.validation`. With every input on it is the reference. Not
   * cached (it is cheap and deterministic for a seed); validation metrics only. Both ways give the
   * same model (fine-tune.spec.ts).
   */
  async fineTune(
    base: TrainedModel,
    data: { train: RuntimeData; validation: RuntimeData; off?: string[] },
    training: Training,
    opts: { epochs: number; seed: number; maxSteps?: number },
    ctx: TrainContextOptions & { lanes?: FineTuneLanes | null } = {},
  ): Promise<FineTuneResult> {
    if (ctx.lanes) {
      if (ctx.lanes.base !== base) throw new Error('fineTune: the lanes belong to another trained model');
      return ctx.lanes.use(ctx.device, opts.seed, async (model) => {
        const t0 = Date.now();
        model.copyStateFrom(base.model);
        model.switchOff(data.off ?? []);
        return this.fineTuneModel(model, t0, data, training, opts, ctx);
      });
    }
    const t0 = Date.now();
    const model = await RuntimeModel.load(await this.dataDir.pull(base.dir), this.createOptions(ctx.device));
    if (data.off?.length) model.switchOff(data.off);
    return this.fineTuneModel(model, t0, data, training, opts, ctx);
  }

  private async fineTuneModel(
    model: RuntimeModel,
    t0: number,
    data: { train: RuntimeData; validation: RuntimeData },
    training: Training,
    opts: { epochs: number; seed: number; maxSteps?: number },
    ctx: TrainContextOptions,
  ): Promise<FineTuneResult> {
    const t1 = Date.now();
    const r = await model.train(
      data.train,
      {
        epochs: opts.epochs,
        batchSize: training.batchSize,
        seed: opts.seed,
        validationFraction: 0,
        progressEvery: 1000,
        ...(opts.maxSteps !== undefined ? { maxSteps: opts.maxSteps } : {}),
      },
      { signal: ctx.signal },
    );
    if (ctx.signal?.aborted || r.cancelled) throw new Error('training aborted');
    if (!Number.isFinite(r.finalLoss)) throw new TrainingDivergedError(r.finalLoss);
    const t2 = Date.now();
    // the metrics computed on the addon's thread (the same AUC; with several fits at once, their
    // validation sorts no longer queue on this thread)
    const validation = await model.evaluate(data.validation, { offThread: true });
    return {
      validation,
      loadMs: t1 - t0,
      trainMs: t2 - t1,
      evalMs: Date.now() - t2,
      steps: r.steps,
      // of trainMs: waiting for a thread, and before the first step (order, data on the device)
      queuedMs: Math.round((r.queuedSeconds ?? 0) * 1000),
      setupMs: Math.round((r.setupSeconds ?? 0) * 1000),
    };
  }

  private async trainPhases(
    key: string,
    built: BuiltSet | StreamedSet,
    phases: (RuntimeData | RowSource)[],
    arch: Architecture,
    training: Training,
    ctx: TrainContextOptions,
    opts: { init?: ModelInit; freezeAfterFirstPhase?: boolean } = {},
  ): Promise<TrainedModel> {
    const rel = path.join('models', key);
    const dir = this.dataDir.abs(rel);
    // trained already, here or (with a deployment store) on another host
    if (!fs.existsSync(path.join(dir, 'meta.json')) && this.dataDir.shared && (await this.dataDir.exists(rel)))
      await this.dataDir.pull(rel);
    if (fs.existsSync(path.join(dir, 'meta.json'))) {
      const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8')) as {
        metrics: TrainedModel['metrics'];
        init?: unknown;
      };
      const model = await RuntimeModel.load(dir, this.createOptions(ctx.device, ctx.batch));
      return {
        key,
        dir: rel,
        cached: true,
        backend: model.backend,
        model,
        metrics: meta.metrics,
        predictions: readF32(path.join(dir, 'test-predictions.f32')),
        labels: readF32(path.join(dir, 'test-labels.f32')),
        validation: {
          predictions: readF32(path.join(dir, 'validation-predictions.f32')),
          labels: readF32(path.join(dir, 'validation-labels.f32')),
        },
        ...(meta.init !== undefined ? { init: meta.init } : {}),
      };
    }
    const tc = Date.now();
    const model = RuntimeModel.create(this.spec(built, arch, training), this.createOptions(ctx.device, ctx.batch));
    const init = opts.init ? await opts.init.apply(model) : undefined;
    const t0 = Date.now();
    let trained: Awaited<ReturnType<RuntimeModel['train']>> | null = null;
    let steps = 0;
    const phasesOf = { queued: 0, setup: 0, steps: 0, validation: 0 };
    for (const [i, data] of phases.entries()) {
      const phase = phases.length > 1 ? `phase ${i + 1}/${phases.length}, ` : '';
      const report = (p: { step: number; totalSteps: number; loss: number }) =>
        ctx.onProgress?.(
          Math.min(1, (i + p.step / Math.max(1, p.totalSteps)) / phases.length),
          `training: ${phase}step ${p.step}/${p.totalSteps}, loss ${p.loss.toFixed(4)}`,
        );
      if (training.firstEpoch === 'inOrder') {
        trained = await fitInOrder(model, isRowSource(data) ? data : rowSourceOf(data), training, {
          ...(ctx.signal ? { signal: ctx.signal } : {}),
          onProgress: report,
          ...(ctx.onChunk ? { onChunk: ctx.onChunk } : {}),
        });
      } else if (isRowSource(data)) {
        throw new Error('a fit on samples still being built needs training.firstEpoch inOrder');
      } else trained = await model.train(
        data,
        {
          epochs: training.epochs,
          batchSize: training.batchSize,
          seed: training.seed,
          validationFraction: training.validationFraction,
          ...(training.validationFraction > 0
            ? { earlyStopping: { patience: training.patience, monitor: 'auc' as const, restoreBest: true } }
            : {}),
          // each report reads the losses back (a device sync on the GPU) and writes progress: every 100 steps
          progressEvery: 100,
        },
        { signal: ctx.signal, onProgress: report },
      );
      steps += trained.steps;
      phasesOf.queued += trained.queuedSeconds ?? 0;
      phasesOf.setup += trained.setupSeconds ?? 0;
      phasesOf.validation += trained.evalSeconds ?? 0;
      phasesOf.steps += trained.seconds - (trained.evalSeconds ?? 0);
      if (ctx.signal?.aborted) throw new Error('training aborted');
      if (!trained.cancelled && !Number.isFinite(trained.finalLoss)) throw new TrainingDivergedError(trained.finalLoss);
      if (trained.cancelled) break;
      // fine-tuning keeps the pretrained embeddings as they are
      if (i === 0 && phases.length > 1 && opts.freezeAfterFirstPhase) model.freezeSlots(model.spec.slots.map((s) => s.name));
    }
    const last = trained!;
    const trainMs = Date.now() - t0;
    // a set still being built when the fit began: its splits once it is
    if ('streamed' in built) {
      const whole = await built.done;
      if (whole.key !== built.key) throw new Error(`the samples built (${whole.key}) are not the ones streamed (${built.key})`);
      built = whole;
    }
    // one forward pass per split for both the metrics and the predictions kept beside the model
    const te = Date.now();
    const { evaluation, predictions } = await model.evaluateWithPredictions(built.test);
    const { evaluation: validation, predictions: validationPredictions } = await model.evaluateWithPredictions(built.validation);
    if (last.cancelled) throw new Error('training cancelled');
    const metrics: TrainedModel['metrics'] = {
      ...evaluation,
      validation,
      trainMs,
      steps,
      epochs: last.epochs,
      stoppedEarly: last.stoppedEarly,
      bestEpoch: last.bestEpoch,
      samplesPerSecond: last.samplesPerSecond,
      evalMs: Date.now() - te,
      trainPhases: {
        createMs: t0 - tc,
        queuedMs: Math.round(phasesOf.queued * 1000),
        setupMs: Math.round(phasesOf.setup * 1000),
        stepsMs: Math.round(phasesOf.steps * 1000),
        validationMs: Math.round(phasesOf.validation * 1000),
      },
      ...offloadMetrics(model),
    };
    const ts = Date.now();
    const testLabels = await labelsOf(built.test);
    const validationLabels = await labelsOf(built.validation);
    const tmp = this.dataDir.abs(path.join('models', `.${key}.${randomBytes(4).toString('hex')}`));
    fs.mkdirSync(tmp, { recursive: true });
    await model.save(tmp);
    writeF32(path.join(tmp, 'test-predictions.f32'), predictions);
    writeF32(path.join(tmp, 'test-labels.f32'), testLabels);
    writeF32(path.join(tmp, 'validation-predictions.f32'), validationPredictions);
    writeF32(path.join(tmp, 'validation-labels.f32'), validationLabels);
    fs.writeFileSync(
      path.join(tmp, 'meta.json'),
      JSON.stringify(
        {
          metrics,
          // the built samples' directory (ids, id spaces) and the key of the split the model saw
          samples: path.basename(built.dir),
          split: built.key,
          training,
          arch,
          ...(init !== undefined ? { init } : {}),
        },
        null,
        2,
      ),
    );
    try {
      fs.renameSync(tmp, dir);
    } catch {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
    // other hosts find it in the deployment's store (the first one stored wins)
    await this.dataDir.push(rel);
    metrics.saveMs = Date.now() - ts;
    return {
      key,
      dir: rel,
      cached: false,
      backend: model.backend,
      model,
      metrics,
      predictions,
      labels: testLabels,
      validation: { predictions: validationPredictions, labels: validationLabels },
      ...(init !== undefined ? { init } : {}),
    };
  }
}

function writeF32(file: string, a: Float32Array): void {
  fs.writeFileSync(file, Buffer.from(a.buffer, a.byteOffset, a.byteLength));
}

export function readF32(file: string): Float32Array {
  const b = fs.readFileSync(file);
  const out = new Float32Array(b.byteLength / 4);
  Buffer.from(out.buffer).set(b);
  return out;
}

/** The trial metrics' word on where the embedding tables trained, when they were offloaded to host memory. */
export function offloadMetrics(model: RuntimeModel): Pick<TrainedModel['metrics'], 'embeddingTables'> {
  const c = model.embeddingCache;
  if (!c) return {};
  const seen = c.hits + c.loads;
  return {
    embeddingTables: {
      placement: 'host memory',
      cacheRows: c.rows,
      tableRows: c.tableRows,
      hitRate: seen ? Math.round((c.hits / seen) * 10000) / 10000 : 0,
      loads: c.loads,
      writebacks: c.writebacks,
    },
  };
}
