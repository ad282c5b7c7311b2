import { describe, expect, it } from 'vitest';

import { cudaAddonAvailable, cudaUnavailableReason, loadCudaAddon } from '../src/binding';
import { stressData, stressShape } from '../src/bench/cuda-stress';
import { DeviceFaultError, injectDeviceFault } from '../src/device-fault';
import { RuntimeModel } from '../src/runtime-model';

// A sticky GPU fault ends this test process's CUDA context (vitest runs each file in its own
// process): kept in a file of its own.
const why = cudaAddonAvailable() ? '' : cudaUnavailableReason() || 'no GPU';
if (why) console.warn(`CUDA tests skipped: ${why}`);

describe.skipIf(!!why)('a sticky GPU fault', () => {
  it('is reported as a DeviceFaultError by the operation it hits and by every later one, never as a model error', async () => {
    const shape = stressShape(7, 5_000);
    const { train, test } = stressData(shape);
    const m = RuntimeModel.create(shape.spec, { backend: 'cuda' });
    await m.train(train, { epochs: 1, batchSize: shape.batch });
    expect(loadCudaAddon()!.contextLost!(0)).toBe('');
    const caused = injectDeviceFault('cuda', 0);
    console.log(`injected: ${caused}`);
    expect(caused).toMatch(/cudaErrorLaunchFailure|cudaErrorIllegalInstruction|cudaErrorAssert/);
    expect(loadCudaAddon()!.contextLost!(0)).toMatch(/^\[cuda-context-lost\] device 0/);
    const hit = await m.evaluate(test).then(
      () => null,
      (e: unknown) => e,
    );
    expect(hit).toBeInstanceOf(DeviceFaultError);
    expect((hit as Error).message).toMatch(/^\[cuda-context-lost\] device 0, /);
    // a new model in the same process cannot work either: refused at once, same kind
    let created: unknown = null;
    try {
      RuntimeModel.create(shape.spec, { backend: 'cuda' });
    } catch (e) {
      created = e;
    }
    expect(created).toBeInstanceOf(DeviceFaultError);
  }, 120_000);
});
