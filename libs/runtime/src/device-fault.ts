import { loadCudaAddon } from './binding';

/** Starts the message of every native error after which the process's CUDA context is unusable. */
export const CUDA_CONTEXT_LOST_TAG = '[cuda-context-lost]';

/**
 * A GPU fault that leaves this process unable to use the GPU (a sticky CUDA error: an illegal
 * address, a trap, an uncorrectable ECC error). Nothing the process runs on that GPU can succeed
 * any more; the work itself may well succeed on a fresh process, so it is worth retrying there.
 */
export class DeviceFaultError extends Error {
  override name = 'DeviceFaultError';
  /** the kind shown in trial logs */
  readonly kind = 'device-fault';
}

/** Whether err (or what it wraps) is a DeviceFaultError or a native error carrying the tag. */
export function isDeviceFault(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 5) return false;
  if (err instanceof DeviceFaultError || (err as Error).name === 'DeviceFaultError') return true;
  const message = (err as { message?: unknown }).message;
  if (typeof message === 'string' && message.includes(CUDA_CONTEXT_LOST_TAG)) return true;
  return isDeviceFault((err as { cause?: unknown }).cause, depth + 1);
}

/** err as a DeviceFaultError when it is one (the native error kept as its cause); otherwise err unchanged. */
export function asDeviceFault(err: unknown): unknown {
  if (err instanceof DeviceFaultError || !isDeviceFault(err)) return err;
  const e = new DeviceFaultError((err as Error).message, { cause: err });
  return e;
}

/**
 * Fault injection, for tests of the recovery path only (the worker calls it only when
 * ABACUS_DEBUG_DEVICE_FAULT names a trial kind). On the GPU: a kernel that traps on `device`, so
 * the process's context is really lost and the next GPU operation fails as a real fault would. On
 * the CPU backend, which has no device to lose, it throws the DeviceFaultError such a fault raises.
 */
export function injectDeviceFault(backend: string, device: number | undefined): string {
  if (backend === 'cuda') {
    const addon = loadCudaAddon();
    if (!addon?.injectDeviceFault) throw new Error('injectDeviceFault: the CUDA addon has no fault injection (rebuild it)');
    return addon.injectDeviceFault(device ?? 0);
  }
  throw new DeviceFaultError(`${CUDA_CONTEXT_LOST_TAG} simulated device fault on the ${backend} backend (fault injection)`);
}
