import { describe, expect, it } from 'vitest';
import { asDeviceFault, CUDA_CONTEXT_LOST_TAG, DeviceFaultError, injectDeviceFault, isDeviceFault } from './device-fault';

describe('device faults', () => {
  it('native errors with the lost-context tag become DeviceFaultError (the original kept as cause); others pass unchanged', () => {
    const native = new Error(`${CUDA_CONTEXT_LOST_TAG} device 0, cudaErrorIllegalAddress: an illegal memory access was encountered`);
    const typed = asDeviceFault(native);
    expect(typed).toBeInstanceOf(DeviceFaultError);
    expect((typed as Error).message).toBe(native.message);
    expect((typed as Error).cause).toBe(native);
    expect(asDeviceFault(typed)).toBe(typed);
    const other = new Error('slot #0: id 7 is outside its vocabulary (5 rows)');
    expect(asDeviceFault(other)).toBe(other);
    expect(isDeviceFault(other)).toBe(false);
    expect(isDeviceFault(new Error('wrapped', { cause: native }))).toBe(true);
  });

  it('fault injection off the GPU throws the error a lost context raises', () => {
    expect(() => injectDeviceFault('cpu', undefined)).toThrow(DeviceFaultError);
  });
});
