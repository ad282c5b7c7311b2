import { cudaDeviceCount, cudaUnavailableReason, type BackendChoice, type BackendKind } from '@abacus/runtime';

export interface BackendSelection {
  backend: BackendKind;
  /** GPUs this worker uses (one trial per GPU at a time); 0 off the cuda backend */
  devices: number;
  reason: string;
}

/**
 * What a worker runs its trials on. `auto` takes cuda when the CUDA addon is built and sees a GPU,
 * and otherwise falls back to cpu, saying why; an explicit `cuda` that cannot run stops start-up.
 */
export function selectBackend(choice: BackendChoice): BackendSelection {
  if (choice === 'cpu' || choice === 'tfjs')
    return { backend: choice, devices: 0, reason: 'configured (ABACUS_RUNTIME_BACKEND)' };
  const why = cudaUnavailableReason();
  const devices = why ? 0 : cudaDeviceCount();
  if (choice === 'cuda') {
    if (!devices) throw new Error(`ABACUS_RUNTIME_BACKEND=cuda, but ${why || 'no GPU is visible'}`);
    return { backend: 'cuda', devices, reason: 'configured (ABACUS_RUNTIME_BACKEND)' };
  }
  if (devices) return { backend: 'cuda', devices, reason: `auto: ${devices} GPU(s) and the CUDA addon present` };
  return { backend: 'cpu', devices: 0, reason: `auto: falling back to cpu (${why || 'no GPU visible'})` };
}
