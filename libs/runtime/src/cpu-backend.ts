import {
  loadNativeAddon,
  type NativeModelConfig,
  type NativeModelHandle,
  type NativeModelState,
  type NativePredictResult,
  type NativeProgress,
  type NativeTrainOptions,
  unpackAblation,
} from './binding';
import type { RuntimeData } from './dataset.types';
import type { MetricSet } from './metrics';
import type { AblationGroupIndex, ModelBackend } from './model-backend.types';
import type { ModelSpec } from './model-spec.schema';
import { toNativeData } from './native-data.mapper';

export function nativeConfig(spec: ModelSpec, threads: number): NativeModelConfig & { init: ModelSpec['init'] } {
  const { dense, sparse } = spec.optimizer;
  return {
    numNumeric: spec.numeric.length,
    vocab: spec.slots.map((s) => s.vocab),
    dim: spec.embeddingDim,
    pooling: spec.pooling,
    wide: spec.wide,
    hidden: spec.hidden,
    dense: { lr: dense.lr, beta1: dense.beta1, beta2: dense.beta2, eps: dense.eps, weightDecay: dense.weightDecay },
    sparse: { kind: sparse.kind, lr: sparse.lr, beta1: sparse.beta1, beta2: sparse.beta2, eps: sparse.eps, initialAccumulator: sparse.initialAccumulator },
    seed: spec.seed,
    init: spec.init,
    threads,
  };
}

/** A backend whose model lives in a native addon: each method maps the data once and hands it over. */
export abstract class NativeBackend implements ModelBackend {
  abstract readonly kind: 'cpu' | 'cuda';

  protected constructor(
    protected readonly spec: ModelSpec,
    protected readonly native: NativeModelHandle,
  ) {}

  tensors() {
    return this.native.tensors();
  }
  optimizerTensors() {
    return this.native.optimizerTensors();
  }
  getState() {
    return this.native.getState();
  }
  setState(s: Partial<NativeModelState>) {
    this.native.setState(s);
  }
  readonly inPlace = true;
  copyFrom(other: ModelBackend) {
    if (!(other instanceof NativeBackend) || other.kind !== this.kind) throw new Error(`copyFrom: a ${this.kind} model copies only from a ${this.kind} model`);
    this.native.copyFrom(other.native);
  }
  train(data: RuntimeData, val: RuntimeData | undefined, o: NativeTrainOptions, onProgress: (p: NativeProgress) => void) {
    return this.native.train(toNativeData(this.spec, data), val ? toNativeData(this.spec, val) : undefined, o, onProgress);
  }
  predict(data: RuntimeData, batchSize: number, keyName?: string): Promise<NativePredictResult> {
    return this.native.predict(toNativeData(this.spec, data, keyName), batchSize);
  }
  evaluateOffThread(data: RuntimeData, batchSize: number): Promise<{ rows: number; metrics: MetricSet }> {
    return this.native.predict(toNativeData(this.spec, data), batchSize, true).then(packedMetrics);
  }
  ablate(data: RuntimeData, groups: AblationGroupIndex[], repeats: number, seed: number, batchSize: number) {
    return this.native.ablate(toNativeData(this.spec, data), { groups, repeats, seed, batchSize }).then(unpackAblation);
  }
  gradients(data: RuntimeData) {
    return this.native.gradients(toNativeData(this.spec, data));
  }
  cancel() {
    this.native.cancel();
  }
}

/** The native multi-threaded C++ backend; all long work runs as N-API async work. */
export class CpuBackend extends NativeBackend {
  readonly kind = 'cpu' as const;

  constructor(spec: ModelSpec, threads: number) {
    super(spec, new (loadNativeAddon().NativeModel)(nativeConfig(spec, threads)));
  }
}

/** The metrics a native predict computed on its thread (auc, logloss, calibration, mean prediction, mean label). */
export function packedMetrics(r: NativePredictResult): { rows: number; metrics: MetricSet } {
  return metricsOf(r.predictions.length, r.metrics);
}

/** The five metrics a native call packed (auc, logloss, calibration, mean prediction, mean label) over `rows` rows. */
export function metricsOf(rows: number, m: Float64Array | undefined): { rows: number; metrics: MetricSet } {
  if (!m || m.length !== 5) throw new Error('the native addon returned no metrics: rebuild it (npm run build:native)');
  return { rows, metrics: { auc: m[0]!, logloss: m[1]!, calibration: m[2]!, meanPrediction: m[3]!, meanLabel: m[4]! } };
}
