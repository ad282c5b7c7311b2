import { describe, expect, it } from 'vitest';

import { cudaAddonAvailable, cudaUnavailableReason } from '../src/binding';
import { runCudaParity } from '../src/bench/cuda-parity';
import { runInPlaceParity } from '../src/bench/in-place-parity';

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

describe.skipIf(!!why)('cuda fine-tunes in place (copyStateFrom + switchOff)', () => {
  it('give the model that loading the checkpoint and training on switched-off copies gives, within float summation order', async () => {
    const cases = await runInPlaceParity('cuda');
    for (const c of cases) {
      console.log(JSON.stringify(c));
      const what = `${c.name} without [${c.off.join(', ')}]: ${JSON.stringify(c)}`;
      expect(c.maxPredDiff, what).toBeLessThan(2e-4);
      expect(c.maxParamDiff, what).toBeLessThan(2e-3);
      expect(Math.abs(c.auc[0] - c.auc[1]), what).toBeLessThan(1e-4);
    }
    // switching inputs off moves the model by far more than that (the check is not vacuous)
    const ref = cases.find((c) => c.name === cases[3]!.name && c.off.length === 0)!;
    expect(Math.abs(cases[3]!.auc[0] - ref.auc[0])).toBeGreaterThan(1e-3);
  }, 300_000);
});
