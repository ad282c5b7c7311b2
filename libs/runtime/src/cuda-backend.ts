import { loadCudaAddon, cudaUnavailableReason, type NativeModelHandle } from './binding';
import { NativeBackend, metricsOf, nativeConfig, packedMetrics } from './cpu-backend';
import { isShardDataset, type ColumnarDataset, type RuntimeData } from './dataset.types';
import type { NativeData, NativePredictResult } from './binding';
import type { ModelSpec } from './model-spec.schema';
import { toNativeData } from './native-data.mapper';

/**
 * The CUDA backend (native/cuda/): parameters and optimizer state on one GPU (`device`), fused
 * embedding-bag / sparse-optimizer kernels, cuBLASLt MLP, loss and AUC on the GPU, the training
 * step replayed as a CUDA graph. Same N-API surface as the CPU addon; `tensors()` views are a host
 * mirror refreshed on demand (and re-uploaded before the next GPU operation).
 */
export class CudaBackend extends NativeBackend {
  readonly kind = 'cuda' as const;
  /** the CUDA addon's lean predict (no per-call offsets scan or staging vectors); absent in older builds */
  private readonly predictLean?: (
    m: NativeModelHandle,
    d: NativeData,
    batch: number,
    predsOnly?: boolean,
    metrics?: boolean,
  ) => Promise<NativePredictResult>;

  /** the CUDA addon's evaluation on the device (metrics from predictions that stay on the GPU); absent in older builds */
  private readonly evaluateOnDevice?: (
    m: NativeModelHandle,
    d: NativeData,
    batch: number,
  ) => Promise<{ rows: number; metrics: Float64Array }>;

  constructor(
    spec: ModelSpec,
    threads: number,
    readonly device = 0,
  ) {
    super(spec, CudaBackend.open(spec, threads, device));
    const addon = loadCudaAddon() as { predictLean?: CudaBackend['predictLean']; evaluateOnDevice?: CudaBackend['evaluateOnDevice'] } | null;
    if (typeof addon?.predictLean === 'function') this.predictLean = addon.predictLean;
    // ABACUS_CUDA_EVAL_METRICS=host: the predictions copied back and the metrics computed on the host
    // (the same AUC, bit for bit; for comparisons)
    // eslint-disable-next-line no-restricted-syntax -- a switch of the runtime library, read where its CUDA backend is made (it is in the config schema and reference)
    const where = process.env.ABACUS_CUDA_EVAL_METRICS ?? 'device';
    if (where !== 'device' && where !== 'host') throw new Error(`ABACUS_CUDA_EVAL_METRICS: '${where}' is not one of device, host`);
    if (where === 'device' && typeof addon?.evaluateOnDevice === 'function') this.evaluateOnDevice = addon.evaluateOnDevice;
  }

  private static open(spec: ModelSpec, threads: number, device: number): NativeModelHandle {
    const addon = loadCudaAddon();
    if (!addon) throw new Error(cudaUnavailableReason());
    const n = addon.deviceCount();
    if (device >= n) throw new Error(`CUDA device ${device} requested but ${n} visible`);
    addon.setDevice(device);
    const cacheLoadFactors = loadFactors(spec);
    return new addon.NativeModel({ ...nativeConfig(spec, threads), ...(cacheLoadFactors ? { cacheLoadFactors } : {}) });
  }

  override predict(data: RuntimeData, batchSize: number, keyName?: string) {
    const d = toNativeData(this.spec, data, keyName);
    if (!this.predictLean) return this.native.predict(d, batchSize);
    if (isShardDataset(data)) return this.predictLean(this.native, d, batchSize);
    return this.predictLean(this.native, d, batchSize, true).then((r) =>
      r.labels ? r : Object.assign(lazyInputs(r.predictions, data, keyName), r.deviceMs !== undefined ? { deviceMs: r.deviceMs } : {}),
    );
  }

  override evaluateOffThread(data: RuntimeData, batchSize: number) {
    const d = toNativeData(this.spec, data);
    // the metrics computed on the GPU: no prediction leaves it
    if (this.evaluateOnDevice)
      return this.evaluateOnDevice(this.native, d, batchSize).then((r) => metricsOf(r.rows, r.metrics));
    if (!this.predictLean) return this.native.predict(d, batchSize, true).then(packedMetrics);
    return this.predictLean(this.native, d, batchSize, true, true).then(packedMetrics);
  }
}

/**
 * ABACUS_HBM_LOAD_FACTORS, per slot in the spec's order: the share of each slot's table rows that the
 * device cache holds, the tables then in host memory ('f': every table; 'name=f,…,*=f': by slot, `*`
 * for the others). Unset: undefined (ABACUS_HBM_BUDGET_GB decides). A bad value names the variable,
 * the entry and why.
 */
export function loadFactors(spec: ModelSpec): number[] | undefined {
  // eslint-disable-next-line no-restricted-syntax -- a switch of the runtime library, read where its CUDA backend makes a model (it is in the config schema and reference)
  const raw = process.env.ABACUS_HBM_LOAD_FACTORS?.trim();
  if (!raw) return undefined;
  const bad = (why: string): never => {
    throw new Error(`ABACUS_HBM_LOAD_FACTORS: ${why}`);
  };
  const factor = (text: string, what: string) => {
    const f = Number(text);
    if (!(f > 0 && f <= 1)) bad(`${what}: '${text}' is not a share of the rows in (0, 1]`);
    return f;
  };
  if (!raw.includes('=')) return spec.slots.map(() => factor(raw, 'the factor'));
  const named = new Map<string, number>();
  for (const entry of raw.split(',').map((e) => e.trim()).filter(Boolean)) {
    const eq = entry.indexOf('=');
    if (eq <= 0) bad(`'${entry}' is not name=factor`);
    const name = entry.slice(0, eq).trim();
    if (name !== '*' && !spec.slots.some((x) => x.name === name)) bad(`'${name}' is not a slot of this model (${spec.slots.map((x) => x.name).join(', ')})`);
    named.set(name, factor(entry.slice(eq + 1).trim(), name));
  }
  const missing = spec.slots.filter((x) => !named.has(x.name) && !named.has('*')).map((x) => x.name);
  if (missing.length) bad(`no factor for ${missing.join(', ')} (name them or give *=factor)`);
  return spec.slots.map((x) => named.get(x.name) ?? named.get('*')!);
}

/**
 * In-memory data: labels / weights / key are the caller's own columns, so the addon returns the
 * predictions alone and these are copied only when read (predict() never reads them).
 */
function lazyInputs(predictions: Float32Array, data: ColumnarDataset, keyName?: string): NativePredictResult {
  let labels: Float32Array | undefined, weights: Float32Array | undefined, key: Int32Array | undefined;
  const r = { predictions } as NativePredictResult;
  Object.defineProperty(r, 'labels', { enumerable: true, get: () => (labels ??= data.labels.slice()) });
  if (data.weights) Object.defineProperty(r, 'weights', { enumerable: true, get: () => (weights ??= data.weights!.slice()) });
  const k = keyName !== undefined ? data.keys?.[keyName] : undefined;
  if (k) Object.defineProperty(r, 'key', { enumerable: true, get: () => (key ??= k.slice()) });
  return r;
}
