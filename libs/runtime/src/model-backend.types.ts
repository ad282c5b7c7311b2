import type { NativeAblation, NativeModelState, NativePredictResult, NativeProgress, NativeTensor, NativeTrainOptions, NativeTrainResult } from './binding';
import type { RuntimeData } from './dataset.types';
import type { MetricSet } from './metrics';
import type { BackendKind } from './model-spec.schema';

export interface AblationGroupIndex {
  numeric: number[];
  slots: number[];
}

/** What RuntimeModel needs from a backend; cpu (native), tfjs (reference) and later cuda. */
export interface ModelBackend {
  readonly kind: BackendKind;
  /** live views of the parameters, named as in checkpoints */
  tensors(): NativeTensor[];
  optimizerTensors(): NativeTensor[];
  getState(): NativeModelState;
  setState(s: Partial<NativeModelState>): void;
  /** this backend can switch inputs off in place (state.inputsOff) and copy another model's state (copyFrom) */
  readonly inPlace: boolean;
  /** every parameter and optimizer value, step, normalization and frozen flags of `other` (same spec and backend) */
  copyFrom(other: ModelBackend): void;
  train(data: RuntimeData, val: RuntimeData | undefined, o: NativeTrainOptions, onProgress: (p: NativeProgress) => void): Promise<NativeTrainResult>;
  predict(data: RuntimeData, batchSize: number, keyName?: string): Promise<NativePredictResult>;
  /** the metrics of computeMetrics over a forward pass, computed on the addon's thread (native backends) */
  evaluateOffThread?(data: RuntimeData, batchSize: number): Promise<{ rows: number; metrics: MetricSet }>;
  ablate(data: RuntimeData, groups: AblationGroupIndex[], repeats: number, seed: number, batchSize: number): Promise<NativeAblation>;
  /** loss, logits and the full-shape gradient of every parameter over all rows as one batch */
  gradients(data: RuntimeData): { loss: number; logits: Float32Array; grads: Record<string, Float32Array> };
  cancel(): void;
}
