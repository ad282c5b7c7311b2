import { describe, expect, it } from 'vitest';

import { cudaAddonAvailable, cudaUnavailableReason } from '../src/binding';
import { randomShapeParity } from '../src/bench/cuda-parity';
import { runCudaStress } from '../src/bench/cuda-stress';

// Runs only where a GPU and the CUDA addon are present (vitest --project gpu); elsewhere it is
// skipped and says why.
const why = cudaAddonAvailable() ? '' : cudaUnavailableReason() || 'no GPU';
if (why) console.warn(`CUDA tests skipped: ${why}`);

describe.skipIf(!!why)('cuda backend on random small and odd shapes', () => {
  it('many models of different shapes in one process, three at a time, collected as they go: no fault', async () => {
    // what a long-lived GPU worker does across experiments (models dropped and finalized on the JS
    // thread while others train: the device-wide sync that once invalidated their graph captures)
    const cases = await runCudaStress({ cases: 48, seed: 1, lanes: 3, backend: 'cuda', maxRows: 20_000 }, (s) => console.log(s));
    const failed = cases.filter((c) => !c.ok);
    expect(failed.map((c) => `${c.shape}: ${c.error}`)).toEqual([]);
    expect(cases).toHaveLength(48);
  }, 600_000);

  it('random shapes match the cpu backend step by step (FP32), models of other shapes alive beside', async () => {
    const cases = await randomShapeParity(16, 201, (s) => console.log(s));
    for (const c of cases) expect(c.ok, `${c.name}: ${JSON.stringify(c.detail)}`).toBe(true);
  }, 600_000);
});
