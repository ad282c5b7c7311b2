import { cudaAddonAvailable, cudaUnavailableReason, loadCudaAddon, loadNativeAddon, type EmbeddingCacheState, type NativeProgress, type NativeTensor, type NativeTrainResult } from './binding';
import { summarizeChanges, type ChangeSummary } from './ablation-stats';
import { loadCheckpointInto, readCheckpointConfig, readSlotEmbeddings, saveCheckpoint } from './checkpoint';
import { CpuBackend } from './cpu-backend';
import { CudaBackend } from './cuda-backend';
import type { RuntimeData } from './dataset.types';
import { asDeviceFault } from './device-fault';
import { computeMetrics, groupAuc, type MetricSet } from './metrics';
import type { ModelBackend } from './model-backend.types';
import { createOptionsSchema, modelSpecSchema, type BackendKind, type CreateOptions, type ModelSpec, type ModelSpecInput } from './model-spec.schema';
import { TfjsBackend } from './tfjs-backend';
import { ablateOptionsSchema, evaluateOptionsSchema, trainOptionsSchema, transferOptionsSchema, type AblateOptionsInput, type EvaluateOptionsInput, type TrainOptionsInput, type TransferOptionsInput } from './train-options.schema';

export type TrainProgress = NativeProgress & { backend: BackendKind };
export interface TrainContext {
  onProgress?: (p: TrainProgress) => void;
  /** aborting stops training after the current step; the result says cancelled: true */
  signal?: AbortSignal;
  /** a separate validation set (instead of validationFraction) for early stopping */
  validationData?: RuntimeData;
}
export type TrainResult = NativeTrainResult & { backend: BackendKind };
export interface EvaluationResult extends MetricSet {
  backend: BackendKind;
  rows: number;
  groupAuc?: { key: string; value: number; groups: number; rowsCovered: number };
}
export interface AblationGroupResult {
  inputs: string[];
  auc: ChangeSummary;
  logloss: ChangeSummary;
  calibration: ChangeSummary;
}
export interface AblationResult {
  backend: BackendKind;
  rows: number;
  repeats: number;
  seed: number;
  base: MetricSet;
  groups: AblationGroupResult[];
}
export interface TransferResult {
  copied: { slot: string; rows: number }[];
  frozen: string[];
}

/** Resolves auto|cpu|cuda|tfjs to the backend that will run. */
export function resolveBackend(choice: 'auto' | BackendKind): BackendKind {
  if (choice === 'tfjs') return 'tfjs';
  if (choice === 'cuda') {
    if (!cudaAddonAvailable()) throw new Error(`CUDA backend not available: ${cudaUnavailableReason()} (use backend "cpu" or "auto")`);
    return 'cuda';
  }
  if (choice === 'auto' && cudaAddonAvailable()) return 'cuda';
  loadNativeAddon(); // throws naming the fix when the addon is missing
  return 'cpu';
}

/**
 * A CTR model on the fused-kernel runtime. Every argument crosses a zod schema; one operation
 * runs at a time; results say which backend ran.
 */
export class RuntimeModel {
  private running: string | null = null;

  private constructor(
    readonly spec: ModelSpec,
    readonly backend: BackendKind,
    private readonly impl: ModelBackend,
  ) {}

  static create(spec: ModelSpecInput, opts: CreateOptions = {}): RuntimeModel {
    const s = modelSpecSchema.parse(spec);
    const o = createOptionsSchema.parse(opts);
    const kind = resolveBackend(o.backend);
    const threads = o.threads ?? Math.max(1, loadThreads());
    try {
      const impl: ModelBackend =
        kind === 'tfjs' ? new TfjsBackend(s) : kind === 'cuda' ? new CudaBackend(s, threads, o.device ?? 0) : new CpuBackend(s, threads);
      return new RuntimeModel(s, kind, impl);
    } catch (err) {
      throw asDeviceFault(err);
    }
  }

  /** Live views of the parameters (named as in checkpoints' native layout); for tests and tools. */
  tensors(): NativeTensor[] {
    return this.impl.tensors();
  }
  optimizerTensors(): NativeTensor[] {
    return this.impl.optimizerTensors();
  }
  get step(): number {
    return this.impl.getState().step;
  }
  /** cuda: the device cache of embedding rows when the tables are in host memory (ABACUS_HBM_BUDGET_GB); undefined when they are on the device */
  get embeddingCache(): EmbeddingCacheState | undefined {
    return this.impl.getState().embeddingCache;
  }
  /** Precision of the evaluation forward (predict / evaluate / ablate): 'bf16', 'tf32' or 'fp32'. */
  get evalPrecision(): string {
    return this.impl.getState().evalPrecision ?? 'fp32';
  }

  /** cpu / cuda: inputs can be switched off in place (switchOff) and state copied model to model (copyStateFrom) */
  get inPlace(): boolean {
    return this.impl.inPlace;
  }

  /**
   * Switches these inputs off in place until switched on again (`[]`: every input on): a numeric
   * input reads as its normalization mean, a slot as an empty bag (no rows read, none updated), for
   * training and evaluation alike — the same model as one fed copies of the data with those inputs
   * switched off, without the copies. cpu and cuda; not with ablate.
   */
  switchOff(names: string[]): void {
    if (this.running) throw new Error(`RuntimeModel is busy (${this.running})`);
    const off = new Set(names);
    for (const n of off)
      if (!this.spec.numeric.includes(n) && !this.spec.slots.some((s) => s.name === n)) throw new Error(`switchOff: "${n}" is not an input of this model`);
    if (!this.impl.inPlace) {
      if (off.size) throw new Error(`switchOff: the ${this.backend} backend cannot switch inputs off in place`);
      return;
    }
    this.impl.setState({ inputsOff: [...this.spec.numeric.map((n) => off.has(n)), ...this.spec.slots.map((s) => off.has(s.name))] });
  }

  /** the inputs switched off in place (switchOff) */
  get inputsOff(): string[] {
    const f = this.impl.getState().inputsOff ?? [];
    return [...this.spec.numeric, ...this.spec.slots.map((s) => s.name)].filter((_, i) => f[i]);
  }

  /**
   * Every parameter and optimizer value, the step, normalization and frozen flags of another model
   * of the same spec and backend, copied where they live (on the GPU device to device; no host copy,
   * no checkpoint): a fresh start from the other model's state. Switched-off inputs are this model's own.
   */
  copyStateFrom(other: RuntimeModel): void {
    if (this.running) throw new Error(`RuntimeModel is busy (${this.running})`);
    if (other.running) throw new Error(`copyStateFrom: the source model is busy (${other.running})`);
    if (other.backend !== this.backend) throw new Error(`copyStateFrom: a ${this.backend} model copies only from a ${this.backend} model, not ${other.backend}`);
    if (JSON.stringify(other.spec) !== JSON.stringify(this.spec)) throw new Error('copyStateFrom: the models have different specs');
    try {
      this.impl.copyFrom(other.impl);
    } catch (err) {
      throw asDeviceFault(err);
    }
  }

  /** Copies every parameter (and the normalization) of another model with the same spec. */
  copyWeightsFrom(other: RuntimeModel): void {
    const src = new Map(other.tensors().map((t) => [t.name, t]));
    for (const t of this.tensors()) {
      const s = src.get(t.name);
      if (!s || s.data.length !== t.data.length) throw new Error(`copyWeightsFrom: tensor ${t.name} missing or of another size`);
      t.data.set(s.data);
    }
    this.impl.setState({ normalized: other.impl.getState().normalized });
  }

  private async exclusive<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (this.running) throw new Error(`RuntimeModel is busy (${this.running}); run operations one after another`);
    this.running = what;
    try {
      return await fn();
    } catch (err) {
      // a sticky GPU fault: typed, so the worker can tell it from an error of the experiment itself
      throw asDeviceFault(err);
    } finally {
      this.running = null;
    }
  }

  async train(data: RuntimeData, opts: TrainOptionsInput = {}, ctx: TrainContext = {}): Promise<TrainResult> {
    const o = trainOptionsSchema.parse(opts);
    return this.exclusive('train', async () => {
      if (ctx.signal?.aborted) throw new Error('training aborted before it started');
      const onAbort = () => this.impl.cancel();
      ctx.signal?.addEventListener('abort', onAbort);
      try {
        const es = o.earlyStopping;
        const trace = this.backend === 'cuda' ? firstFitTrace() : null;
        const r = await this.impl.train(
          data,
          ctx.validationData,
          {
            epochs: o.epochs,
            batchSize: o.batchSize,
            shuffle: o.shuffle,
            seed: o.seed,
            maxSteps: o.maxSteps,
            validationFraction: ctx.validationData ? 0 : o.validationFraction,
            patience: es ? es.patience : 0,
            minDelta: es ? es.minDelta : 0,
            monitor: es ? es.monitor : 'auc',
            restoreBest: es ? es.restoreBest : false,
            progressEvery: o.progressEvery,
            ...(o.evaluateFirst ? { evaluateFirst: true } : {}),
          },
          (p) => ctx.onProgress?.({ ...p, backend: this.backend }),
        );
        trace?.(r.steps);
        return { ...r, backend: this.backend };
      } finally {
        ctx.signal?.removeEventListener('abort', onAbort);
      }
    });
  }

  async predict(data: RuntimeData, opts: { batchSize?: number } = {}): Promise<Float32Array> {
    const o = evaluateOptionsSchema.parse(opts);
    return this.exclusive('predict', async () => {
      const r = await this.impl.predict(data, o.batchSize);
      this.lastPredictDeviceMs = r.deviceMs ?? null;
      return r.predictions;
    });
  }

  /** GPU time of the last predict's forward (ms, CUDA events; no host dispatch or copies); null on the CPU */
  lastPredictDeviceMs: number | null = null;

  async evaluate(data: RuntimeData, opts: EvaluateOptionsInput = {}): Promise<EvaluationResult> {
    const o = evaluateOptionsSchema.parse(opts);
    return this.exclusive('evaluate', async () => {
      if (o.offThread && o.groupKey === undefined && this.impl.evaluateOffThread) {
        const e = await this.impl.evaluateOffThread(data, o.batchSize);
        return { backend: this.backend, rows: e.rows, ...e.metrics };
      }
      const r = await this.impl.predict(data, o.batchSize, o.groupKey);
      const m = computeMetrics(r.predictions, r.labels, r.weights);
      const out: EvaluationResult = { backend: this.backend, rows: r.predictions.length, ...m };
      if (o.groupKey !== undefined) out.groupAuc = { key: o.groupKey, ...groupAuc(r.predictions, r.labels, r.key!) };
      return out;
    });
  }

  /** evaluate and predict in one forward pass: the metrics and the predictions they were computed from */
  async evaluateWithPredictions(data: RuntimeData, opts: EvaluateOptionsInput = {}): Promise<{ evaluation: EvaluationResult; predictions: Float32Array }> {
    const o = evaluateOptionsSchema.parse(opts);
    return this.exclusive('evaluate', async () => {
      const r = await this.impl.predict(data, o.batchSize, o.groupKey);
      const evaluation: EvaluationResult = { backend: this.backend, rows: r.predictions.length, ...computeMetrics(r.predictions, r.labels, r.weights) };
      if (o.groupKey !== undefined) evaluation.groupAuc = { key: o.groupKey, ...groupAuc(r.predictions, r.labels, r.key!) };
      return { evaluation, predictions: r.predictions };
    });
  }

  /**
   * Permutation importance: each group's inputs are permuted together across the evaluation set
   * (an index applied inside the lookup, no shuffled copy), `repeats` times with seeded
   * permutations; reports the metric change (permuted - base) with mean, std and a 95% interval.
   */
  async ablate(data: RuntimeData, opts: AblateOptionsInput): Promise<AblationResult> {
    const o = ablateOptionsSchema.parse(opts);
    const groups = o.groups.map((g) => {
      const numeric: number[] = [], slots: number[] = [];
      for (const name of g) {
        const j = this.spec.numeric.indexOf(name), s = this.spec.slots.findIndex((x) => x.name === name);
        if (j >= 0) numeric.push(j);
        else if (s >= 0) slots.push(s);
        else throw new Error(`ablate: "${name}" is not an input of this model`);
      }
      return { numeric, slots };
    });
    return this.exclusive('ablate', async () => {
      const r = await this.impl.ablate(data, groups, o.repeats, o.seed, o.batchSize);
      return {
        backend: this.backend,
        rows: data.rows,
        repeats: o.repeats,
        seed: o.seed,
        base: r.base,
        groups: o.groups.map((inputs, g) => {
          const ms = r.permuted.slice(g * o.repeats, (g + 1) * o.repeats);
          const F = r.baseFolds.length;
          // per fold: change averaged over the repeats
          const fold = (k: keyof MetricSet) =>
            r.baseFolds.map((b, f) => {
              let s = 0;
              for (let rep = 0; rep < o.repeats; rep++) s += r.permutedFolds[(g * o.repeats + rep) * F + f]![k] - b[k];
              return s / o.repeats;
            });
          return {
            inputs,
            auc: summarizeChanges(ms.map((m) => m.auc - r.base.auc), fold('auc')),
            logloss: summarizeChanges(ms.map((m) => m.logloss - r.base.logloss), fold('logloss')),
            calibration: summarizeChanges(ms.map((m) => m.calibration - r.base.calibration), fold('calibration')),
          };
        }),
      };
    });
  }

  /** Loss, logits and full-shape gradients over all rows as one batch (the oracle tests use it). */
  gradients(data: RuntimeData): { loss: number; logits: Float32Array; grads: Record<string, Float32Array>; backend: BackendKind } {
    if (this.running) throw new Error(`RuntimeModel is busy (${this.running})`);
    return { ...this.impl.gradients(data), backend: this.backend };
  }

  /** safetensors + model.json; see README "Checkpoint format". */
  async save(dir: string): Promise<void> {
    return this.exclusive('save', () => saveCheckpoint(dir, this.spec, this.backend, this.impl.getState(), this.impl.tensors(), this.impl.optimizerTensors()));
  }

  /** Loads a checkpoint to continue training or to evaluate (optimizer state included). */
  static async load(dir: string, opts: CreateOptions = {}): Promise<RuntimeModel> {
    const cfg = await readCheckpointConfig(dir);
    const m = RuntimeModel.create(cfg.spec, opts);
    await loadCheckpointInto(dir, m.spec, m.impl.tensors(), m.impl.optimizerTensors(), true);
    m.impl.setState({ step: cfg.state.step, normalized: cfg.state.normalized, frozen: cfg.state.frozen });
    return m;
  }

  /**
   * Sets rows of one slot's embedding (and wide) table from given rows: row `ids[i]` of the slot gets
   * `emb[i*dim .. (i+1)*dim)` (and `wide[i]`); with `freeze` the slot is not updated by training.
   * For carrying embeddings between models whose ids mean different things (the caller maps them).
   */
  async setSlotRows(slot: string, ids: Int32Array, emb: Float32Array, wide: Float32Array | null, freeze = false): Promise<void> {
    return this.exclusive('setSlotRows', async () => {
      const D = this.spec.embeddingDim;
      const i = this.spec.slots.findIndex((s) => s.name === slot);
      if (i < 0) throw new Error(`setSlotRows: "${slot}" is not a slot of this model`);
      if (emb.length !== ids.length * D) throw new Error(`setSlotRows: ${ids.length} ids need ${ids.length * D} values, got ${emb.length}`);
      if (wide && wide.length !== ids.length) throw new Error(`setSlotRows: ${ids.length} ids need ${ids.length} wide values, got ${wide.length}`);
      const vocab = this.spec.slots[i].vocab;
      let base = 0;
      for (let k = 0; k < i; k++) base += this.spec.slots[k].vocab;
      const params = new Map(this.impl.tensors().map((t) => [t.name, t.data]));
      const table = params.get('embedding.table')!, wideTable = params.get('wide.table');
      for (let r = 0; r < ids.length; r++) {
        const id = ids[r];
        if (!(id >= 0 && id < vocab)) throw new Error(`setSlotRows: id ${id} outside [0, ${vocab}) of slot "${slot}"`);
        table.set(emb.subarray(r * D, r * D + D), (base + id) * D);
        if (wide && wideTable) wideTable[base + id] = wide[r];
      }
      if (freeze) {
        const state = this.impl.getState();
        state.frozen[i] = true;
        this.impl.setState({ frozen: state.frozen });
      }
    });
  }

  /** Keeps these slots' embedding (and wide) rows fixed from now on (e.g. fine-tuning after pretraining). */
  freezeSlots(slots: string[]): void {
    const state = this.impl.getState();
    for (const n of slots) {
      const i = this.spec.slots.findIndex((s) => s.name === n);
      if (i < 0) throw new Error(`freezeSlots: "${n}" is not a slot of this model`);
      state.frozen[i] = true;
    }
    this.impl.setState({ frozen: state.frozen });
  }

  /**
   * Transfer: copies the embedding (and wide) rows of every slot that the checkpoint has under the
   * same name and dim (rows up to the smaller vocabulary), optionally frozen during training.
   */
  async initFrom(dir: string, opts: TransferOptionsInput = {}): Promise<TransferResult> {
    const o = transferOptionsSchema.parse(opts);
    return this.exclusive('initFrom', async () => {
      const src = await readSlotEmbeddings(dir);
      const D = this.spec.embeddingDim;
      if (src.cfg.spec.embeddingDim !== D) throw new Error(`initFrom: checkpoint embedding dim ${src.cfg.spec.embeddingDim} differs from this model's ${D}`);
      const params = new Map(this.impl.tensors().map((t) => [t.name, t.data]));
      const table = params.get('embedding.table')!, wide = params.get('wide.table');
      const wanted = o.slots ? new Set(o.slots) : null;
      for (const n of o.slots ?? []) if (!this.spec.slots.some((s) => s.name === n)) throw new Error(`initFrom: "${n}" is not a slot of this model`);
      const copied: TransferResult['copied'] = [];
      const state = this.impl.getState();
      let base = 0;
      this.spec.slots.forEach((s, i) => {
        const e = src.emb.get(s.name);
        if (e && (!wanted || wanted.has(s.name))) {
          const rows = Math.min(s.vocab, e.length / D);
          table.set(e.subarray(0, rows * D), base * D);
          const w = src.wide.get(s.name);
          if (wide && w) wide.set(w.subarray(0, rows), base);
          copied.push({ slot: s.name, rows });
          if (o.freeze) state.frozen[i] = true;
        }
        base += s.vocab;
      });
      this.impl.setState({ frozen: state.frozen });
      return { copied, frozen: o.freeze ? copied.map((c) => c.slot) : [] };
    });
  }
}

function loadThreads(): number {
  try {
    return loadNativeAddon().cpuInfo().hardwareThreads;
  } catch {
    return 1;
  }
}

let firstFitTraced = false;

/**
 * ABACUS_CUDA_TRACE_FIRST_FIT=1: the process's first CUDA fit runs under a CUPTI activity trace and
 * its kernels (time per step, launches) go to stderr as one line, to see where a fit's device time
 * goes in a running worker. Returns the function that ends the trace, or null.
 */
function firstFitTrace(): ((steps: number) => void) | null {
  // eslint-disable-next-line no-restricted-syntax -- a diagnostic of the runtime library, read where the CUDA addon reads its own settings (it is in the config schema and reference)
  if (firstFitTraced || process.env.ABACUS_CUDA_TRACE_FIRST_FIT !== '1') return null;
  const addon = loadCudaAddon();
  if (!addon) return null;
  firstFitTraced = true;
  const why = addon.traceStart();
  if (why) {
    console.error(`[abacus-cuda] no trace of the first fit: ${why}`);
    return null;
  }
  return (steps) => {
    const t = JSON.parse(addon.traceStop(Math.max(1, steps))) as Record<string, unknown> & {
      kernels?: { name: string; count: number; ns_per_region: number }[];
    };
    const kernels = (t.kernels ?? []).slice(0, 25).map((k) => ({
      name: k.name.slice(0, 100),
      perStep: Math.round((k.count / Math.max(1, steps)) * 100) / 100,
      usPerStep: Math.round(k.ns_per_region / 100) / 10,
    }));
    console.error(`[abacus-cuda] trace of the first fit: ${JSON.stringify({ steps, ...t, kernels })}`);
  };
}
