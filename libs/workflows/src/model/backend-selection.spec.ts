import { describe, expect, it } from 'vitest';
import { cudaDeviceCount } from '@abacus/runtime';
import { selectBackend } from './backend-selection';

describe('selectBackend', () => {
  const gpus = cudaDeviceCount();

  it('auto takes the GPUs when the CUDA addon sees them, else falls back to cpu saying why', () => {
    const s = selectBackend('auto');
    if (gpus > 0) expect(s).toMatchObject({ backend: 'cuda', devices: gpus });
    else {
      expect(s).toMatchObject({ backend: 'cpu', devices: 0 });
      expect(s.reason).toMatch(/falling back to cpu/);
    }
  });

  it('an explicit cuda that cannot run stops start-up with the key and the reason', () => {
    if (gpus > 0) expect(selectBackend('cuda').backend).toBe('cuda');
    else expect(() => selectBackend('cuda')).toThrow(/ABACUS_RUNTIME_BACKEND=cuda, but/);
  });

  it('cpu and tfjs are taken as configured', () => {
    expect(selectBackend('cpu')).toMatchObject({ backend: 'cpu', devices: 0 });
    expect(selectBackend('tfjs')).toMatchObject({ backend: 'tfjs', devices: 0 });
  });
});
