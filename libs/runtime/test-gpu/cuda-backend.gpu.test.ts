import { describe, expect, it } from 'vitest';

import { cudaAddonAvailable, cudaUnavailableReason } from '../src/binding';
import { runCudaParity } from '../src/bench/cuda-parity';

// Runs only where a GPU and the CUDA addon are present (vitest --project gpu); elsewhere it is
// skipped and says why.
const why = cudaAddonAvailable() ? '' : cudaUnavailableReason() || 'no GPU';
if (why) console.warn(`CUDA tests skipped: ${why}`);

describe.skipIf(!!why)('cuda backend vs cpu (same data, seed, schedule)', () => {
  it('per-step loss within 1e-3 relative over 100 steps, test AUC within 0.002, predictions, ablation', async () => {
    const cases = await runCudaParity((s) => console.log(s));
    for (const c of cases) expect(c.ok, `${c.name}: ${JSON.stringify(c.detail)}`).toBe(true);
  }, 600_000);
});
