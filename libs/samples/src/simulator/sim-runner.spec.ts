import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatSimSummary, runSim } from './sim-runner';

describe('runSim', () => {
  it('writes a world and summarises files, lines, CTR, upper-bound AUC and elapsed time', async () => {
    const out = await mkdtemp(path.join(tmpdir(), 'abacus-sim-'));
    try {
      const s = await runSim({ seed: 3, rows: 3_000, out });
      expect(s.domains.map((d) => d.name)).toEqual(['feed', 'search', 'mall']);
      expect(s.files.find((f) => f.path === 'impressions.parquet')!.rows).toBe(3_000);
      expect(s.elapsedMs.total).toBeGreaterThanOrEqual(s.elapsedMs.write);
      const text = formatSimSummary(s);
      expect(text).toMatch(/upper-bound test AUC/);
      expect(text).toMatch(/samples\/mall\.parquet/);
      expect(text).toMatch(/elapsed: simulate/);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});
