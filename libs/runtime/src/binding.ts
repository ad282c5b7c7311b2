import { existsSync } from 'node:fs';
import path from 'node:path';

/** Views and shapes exchanged with the native addon (libs/runtime/native/addon.cc). */
export interface NativeTensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

export interface NativeMemoryPart {
  rows: number;
  numeric: Float32Array;
  numStride: number;
  labels: Float32Array;
  weights?: Float32Array;
  key?: Int32Array;
  offs: Int32Array[];
  ids: Int32Array[];
}
export interface NativeShardPart {
  shard: NativeShardHandle;
  numStride: number;
  slotIndex: Int32Array;
  keyIndex: number;
  /** rows [start, start + count) of the shard; default all */
  start?: number;
  count?: number;
  /** loss weights of these rows, overriding the shard's own */
  weights?: Float32Array;
}
export interface NativeData {
  parts: (NativeMemoryPart | NativeShardPart)[];
  numMap: Int32Array;
}

export interface NativeModelConfig {
  numNumeric: number;
  vocab: number[];
  dim: number;
  pooling: 'sum' | 'mean';
  wide: boolean;
  hidden: number[];
  dense: { lr: number; beta1: number; beta2: number; eps: number; weightDecay: number };
  sparse: { kind: 'adam' | 'adagrad'; lr: number; beta1: number; beta2: number; eps: number; initialAccumulator: number };
  seed: number;
  threads: number;
}

export interface NativeProgress {
  epoch: number;
  step: number;
  totalSteps: number;
  loss: number;
  samplesPerSecond: number;
  epochEnd: boolean;
  valAuc?: number;
  valLogloss?: number;
}

export interface NativeTrainOptions {
  epochs: number;
  batchSize: number;
  shuffle: boolean;
  seed: number;
  maxSteps: number;
  validationFraction: number;
  patience: number;
  minDelta: number;
  monitor: 'auc' | 'logloss';
  restoreBest: boolean;
  progressEvery: number;
  /** evaluate the validation rows before the first step, as the best so far (see TrainOptions.evaluateFirst) */
  evaluateFirst?: boolean;
}

export interface NativeTrainResult {
  steps: number;
  samples: number;
  epochs: number;
  finalLoss: number;
  samplesPerSecond: number;
  seconds: number;
  /** native backends: waiting for one of libuv's threads, before the first step (split, normalisation,
   * data to the device), and the per-epoch validation passes (part of seconds) */
  queuedSeconds?: number;
  setupSeconds?: number;
  evalSeconds?: number;
  stoppedEarly: boolean;
  cancelled: boolean;
  bestEpoch: number;
  bestValAuc: number;
  bestValLogloss: number;
  trainRows: number;
  validationRows: number;
  /** evaluateFirst: the validation metrics before the first step */
  initialValAuc?: number;
  initialValLogloss?: number;
  history: { epoch: number; trainLoss: number; valAuc: number; valLogloss: number; seconds: number }[];
}

export interface NativeMetrics {
  auc: number;
  logloss: number;
  calibration: number;
  meanPrediction: number;
  meanLabel: number;
}

/** permuted: one per (group, repeat), group-major; *Folds: F contiguous evaluation folds each */
/** The addon's ablation result: counts [1, permuted, baseFolds, permutedFolds], then 5 values per metric set. */
export interface NativePackedAblation {
  packed: Float64Array;
}

/** Unpacks the addon's ablation result into metric objects. */
export function unpackAblation(p: NativePackedAblation): NativeAblation {
  const d = p.packed;
  let q = 4;
  const next = (): NativeMetrics => {
    const m = { auc: d[q]!, logloss: d[q + 1]!, calibration: d[q + 2]!, meanPrediction: d[q + 3]!, meanLabel: d[q + 4]! };
    q += 5;
    return m;
  };
  const take = (n: number) => Array.from({ length: n }, next);
  const base = next();
  const permuted = take(d[1]!);
  const baseFolds = take(d[2]!);
  const permutedFolds = take(d[3]!);
  return { base, permuted, baseFolds, permutedFolds };
}

export interface NativeAblation {
  base: NativeMetrics;
  permuted: NativeMetrics[];
  baseFolds: NativeMetrics[];
  permutedFolds: NativeMetrics[];
}

export interface NativePredictResult {
  predictions: Float32Array;
  labels: Float32Array;
  weights?: Float32Array;
  key?: Int32Array;
  /** the CUDA addon's lean predict: GPU time of the forward's kernels (ms, CUDA events) */
  deviceMs?: number;
  /** asked for: auc, logloss, calibration, mean prediction, mean label, computed on the addon's thread */
  metrics?: Float64Array;
}

export interface NativeModelState {
  step: number;
  normalized: boolean;
  frozen: boolean[];
  /** inputs switched off, numeric inputs then slots (cpu / cuda): a numeric input reads as its normalization mean, a slot as an empty bag */
  inputsOff?: boolean[];
  isa?: string;
  /** 'bf16' when predict / evaluate / ablate use a BF16 forward (cpu: AVX512-BF16 / AMX; cuda: BF16 hidden-layer inputs), 'tf32' on cuda with ABACUS_CUDA_EVAL_PRECISION=tf32 */
  evalPrecision?: 'bf16' | 'tf32' | 'fp32';
  evalKernel?: 'bf16-amx' | 'bf16' | 'tf32' | 'fp32';
  threads?: number;
  /** cuda with the embedding tables in host memory (ABACUS_HBM_BUDGET_GB): the device cache of their rows and what its fills did */
  embeddingCache?: EmbeddingCacheState;
}

export interface EmbeddingCacheState {
  /** rows the device cache holds, and the tables' rows (all slots) */
  rows: number;
  tableRows: number;
  /** rows read from host memory, written back to it, and found cached, over the model's fills */
  loads: number;
  writebacks: number;
  hits: number;
}

export interface NativeModelHandle {
  tensors(): NativeTensor[];
  optimizerTensors(): NativeTensor[];
  getState(): NativeModelState;
  setState(s: Partial<NativeModelState>): void;
  /** every parameter and optimizer value, step, normalization and frozen flags of a model of the same configuration and addon */
  copyFrom(other: NativeModelHandle): void;
  train(
    data: NativeData,
    val: NativeData | undefined,
    opts: NativeTrainOptions,
    onProgress?: (p: NativeProgress) => void,
  ): Promise<NativeTrainResult>;
  /** metrics: also the evaluation metrics, computed on the addon's worker thread (NativePredictResult.metrics) */
  predict(data: NativeData, batchSize?: number, metrics?: boolean): Promise<NativePredictResult>;
  ablate(
    data: NativeData,
    opts: { groups: { numeric: number[]; slots: number[] }[]; repeats: number; seed: number; batchSize: number },
  ): Promise<NativePackedAblation>;
  gradients(data: NativeData): { loss: number; logits: Float32Array; grads: Record<string, Float32Array> };
  cancel(): void;
}

export interface NativeShardHandle {
  readonly json: string;
  readonly rows: number;
}

export interface NativeAddon {
  NativeModel: new (cfg: NativeModelConfig) => NativeModelHandle;
  openShard(path: string, verify: boolean): Promise<NativeShardHandle>;
  writeShard(
    path: string,
    rows: number,
    json: string,
    sections: { kind: number; index: number; data: Float32Array | Int32Array }[],
  ): Promise<void>;
  /** the rows (all in order, or `rows`) of the data copied into arrays in numMap / slot order, off the event loop */
  gather(
    data: NativeData,
    numNumeric: number,
    numSlots: number,
    rows?: Int32Array,
  ): Promise<{
    numeric: Float32Array;
    labels: Float32Array;
    weights?: Float32Array;
    key?: Int32Array;
    offs: Int32Array[];
    ids: Int32Array[];
  }>;
  /**
   * The stages the CUDA backend's host-streamed steps would copy for one epoch of training rows (the
   * used bytes of each batch's stage, one after another, epochs [epoch, epoch + epochs)), packed from the columns or from row-major
   * copies of each window (`records`), or those records copied as they are and unpacked as the
   * device unpacks them (`raw`), or gathered from each window copied column by column, as the device
   * holds it, where ColumnStream::pack_positions says the rows are (`columns`: the default
   * host-streamed path from shards); windowed as on the GPU when the data is mapped. For tests.
   */
  packBatches(
    data: NativeData,
    numNumeric: number,
    numSlots: number,
    trainRows: Float64Array,
    opts: { shuffle: boolean; seed: number; epoch: number; epochs?: number; batch: number; records: boolean; raw?: boolean; columns?: boolean },
  ): Buffer;
  /**
   * The K per-seed AUC(B_k) - AUC(A_k) on every row, then per bootstrap replicate their mean on rows
   * weighted by the replicate's resampling counts (NaN where a class has no weight): K + replicates
   * numbers, bit for bit those of the JS loop (stats/paired-bootstrap.ts: Prng(seed)'s draws, n a
   * replicate). Predictions must hold no NaN. Ranked and resampled on `threads` threads, off the event loop.
   */
  pairedSeedBootstrap(
    labels: Float32Array,
    predsA: Float32Array[],
    predsB: Float32Array[],
    replicates: number,
    seed: number,
    threads: number,
  ): Promise<Float64Array>;
  /** avx512bf16 / evalPrecision: whether predict / evaluate / ablate run the bf16 forward (env ABACUS_CPU_EVAL_PRECISION=fp32 opts out) */
  cpuInfo(): {
    avx2: boolean;
    avx512f: boolean;
    gemm: string;
    hardwareThreads: number;
    avx512bf16?: boolean;
    amxBf16?: boolean;
    vendorAmd?: boolean;
    evalPrecision?: 'bf16' | 'fp32';
    evalKernel?: 'bf16-amx' | 'bf16' | 'fp32';
  };
  backend: 'cpu';
}

let overridePath: string | undefined;

/** For self-contained bundles (the standalone bench runner) that ship the addon beside them. */
export function setAddonPath(file: string): void {
  overridePath = file;
  cached = undefined;
}

/** Where the built addon lives; the same path from source (vitest) and from dist/. */
export function addonPath(): string {
  if (overridePath) return overridePath;
  return path.join(path.dirname(require.resolve('@abacus/runtime/package.json')), 'build', 'Release', 'abacus_runtime.node');
}

let cached: NativeAddon | undefined;

/** The only place that loads the .node file. Throws an Error naming the fix when it is missing. */
export function loadNativeAddon(file: string = addonPath()): NativeAddon {
  if (cached && file === addonPath()) return cached;
  if (!existsSync(file)) {
    throw new Error(
      `The runtime's native CPU addon is not built (${file} is missing): run \`npm run build:native\` (bash scripts/build-native.sh)`,
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const addon = require(file) as NativeAddon;
  if (file === addonPath()) cached = addon;
  return addon;
}

export function nativeAddonAvailable(): boolean {
  try {
    loadNativeAddon();
    return true;
  } catch {
    return false;
  }
}

export interface NativeCudaAddon extends Omit<NativeAddon, 'backend' | 'cpuInfo'> {
  backend: 'cuda';
  cpuInfo: NativeAddon['cpuInfo'];
  deviceCount(): number;
  /** device used by the next `new NativeModel(cfg)` */
  setDevice(d: number): void;
  cudaInfo(): { devices: number; names: string[]; status: string };
  /** CUPTI trace from here: "" or the reason CUPTI is unavailable (absent in older builds) */
  traceStart(): string;
  /** launch counts and per-kernel times since traceStart, as JSON; times also per region */
  traceStop(regions: number): string;
  /** "" while this process's CUDA context on the device is usable, else why not (absent in older builds) */
  contextLost?(device: number): string;
  /** fault injection (tests of the recovery path): a trapping kernel; returns the error it caused */
  injectDeviceFault?(device: number): string;
}

let cudaOverridePath: string | undefined;
/** For self-contained bundles that ship the CUDA addon beside them. */
export function setCudaAddonPath(file: string): void {
  cudaOverridePath = file;
  cudaCached = undefined;
}
/** build/Release/abacus_runtime_cuda.node (built by scripts/build-cuda.sh on a machine with nvcc). */
export function cudaAddonPath(): string {
  if (cudaOverridePath) return cudaOverridePath;
  return path.join(path.dirname(addonPath()), 'abacus_runtime_cuda.node');
}
let cudaCached: NativeCudaAddon | null | undefined;
let cudaWhy = '';
/** The CUDA addon, or null (with the reason in cudaUnavailableReason()) when absent or unloadable. */
export function loadCudaAddon(): NativeCudaAddon | null {
  if (cudaCached !== undefined) return cudaCached;
  const file = cudaAddonPath();
  if (!existsSync(file)) {
    cudaWhy = `CUDA addon not built (${file} is missing; build it with bash scripts/build-cuda.sh on a machine with nvcc)`;
    cudaCached = null;
    return null;
  }
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    cudaCached = require(file) as NativeCudaAddon;
  } catch (e) {
    cudaWhy = `CUDA addon failed to load: ${(e as Error).message}`;
    cudaCached = null;
  }
  return cudaCached;
}
/** Number of CUDA devices the CUDA addon sees; 0 when there is no addon, no driver or no GPU. */
export function cudaDeviceCount(): number {
  const a = loadCudaAddon();
  if (!a) return 0;
  try {
    return a.deviceCount();
  } catch {
    return 0;
  }
}
/** The names of the GPUs the CUDA addon sees (empty when there is no addon, driver or GPU). */
export function cudaDeviceNames(): string[] {
  const a = loadCudaAddon();
  if (!a) return [];
  try {
    return a.cudaInfo().names;
  } catch {
    return [];
  }
}
/** Why the cuda backend cannot run here ('' when it can). */
export function cudaUnavailableReason(): string {
  const a = loadCudaAddon();
  if (!a) return cudaWhy;
  const info = a.cudaInfo();
  return info.status === 'ok' ? '' : `CUDA backend unavailable: ${info.status}`;
}
/** True when the CUDA addon is built, loads, sees a GPU and finds cuBLASLt. */
export function cudaAddonAvailable(): boolean {
  return cudaDeviceCount() > 0 && cudaUnavailableReason() === '';
}
