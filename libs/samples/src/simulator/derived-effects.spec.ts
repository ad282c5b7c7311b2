import { describe, expect, it } from 'vitest';
import { DERIVED_EFFECTS, drawClicksWithHabit } from './derived-effects';
import { Prng } from './prng';
import type { ImpressionTable } from './sim-world.types';
import { simulateWorld } from './simulator.service';

describe('derived effects (simulateWorld derivedEffects)', () => {
  const off = simulateWorld({ seed: 42, rows: 20_000 });
  const on = simulateWorld({ seed: 42, rows: 20_000, derivedEffects: true });

  it('change only the clicks and add their columns: every other draw of the world is the same', () => {
    expect(off.impressions.derived).toBeUndefined();
    expect(off.groundTruth.derived).toBeUndefined();
    for (const k of ['ts', 'userId', 'itemId', 'contextId', 'domainIndex'] as const)
      expect(Buffer.from(on.impressions[k].buffer).equals(Buffer.from(off.impressions[k].buffer))).toBe(true);
    expect(Array.from(on.impressions.click)).not.toEqual(Array.from(off.impressions.click));
    expect(on.groundTruth.features).toEqual(off.groundTruth.features);
    expect(on.groundTruth.derived!.map((d) => [d.name, d.expression])).toEqual([
      ['cross', DERIVED_EFFECTS.cross.expression],
      ['ratio', DERIVED_EFFECTS.ratio.expression],
      ['rate', DERIVED_EFFECTS.rate.expression],
    ]);
    for (const d of on.groundTruth.derived!) expect(d.effect).toBeGreaterThan(0.1);
  });

  it('the cross carries no main effect of either column', () => {
    const d = on.impressions.derived!;
    // the planted term by region alone and by slot alone averages to ~0; by the pair it does not
    const logitOn = on.flat.trueLogit;
    const logitOff = off.flat.trueLogit;
    const by = (key: (r: number) => number, k: number) => {
      const s = new Float64Array(k);
      const c = new Float64Array(k);
      for (let r = 0; r < on.impressions.rows; r++) {
        // the cross term alone: on − off − ratio term − habit term is not kept, so use the table's own
        // property: centred margins make the per-region mean of (on − off) equal across regions up to
        // the ratio and habit terms, which do not depend on the region
        s[key(r)] += logitOn[r] - logitOff[r];
        c[key(r)]++;
      }
      const means = Array.from(s, (x, i) => x / c[i]);
      const m = means.reduce((a, x) => a + x, 0) / k;
      return Math.sqrt(means.reduce((a, x) => a + (x - m) ** 2, 0) / k);
    };
    const [va, vb] = DERIVED_EFFECTS.cross.values;
    const region = by((r) => d.region[r], va);
    const slot = by((r) => d.slot[r], vb);
    const pair = by((r) => d.region[r] * vb + d.slot[r], va * vb);
    expect(pair).toBeGreaterThan(0.4);
    expect(region).toBeLessThan(0.1);
    expect(slot).toBeLessThan(0.1);
  });

  it('a click habit reads only rows before each row time', () => {
    // one user and category, rows on a few instants: the term of row r never depends on rows at or after its time
    const n = 40;
    const base = (): ImpressionTable => ({
      rows: n,
      impressionId: Int32Array.from({ length: n }, (_, i) => i),
      ts: Float64Array.from({ length: n }, (_, i) => Math.floor(i / 3) * 86_400),
      domainIndex: new Uint8Array(n),
      domains: ['feed'],
      userId: new Int32Array(n),
      itemId: new Int32Array(n),
      contextId: new Int32Array(n),
      click: new Uint8Array(n),
    });
    const a = base();
    const termA = drawClicksWithHabit(new Prng(1), a, new Float64Array(n).fill(-1), new Int32Array(1), 1);
    for (const cut of [9, 21, 30]) {
      // the same draws for rows before `cut`'s time, other clicks after (a different logit there)
      const b = base();
      const logit = new Float64Array(n).fill(-1);
      for (let r = 0; r < n; r++) if (b.ts[r] >= b.ts[cut]) logit[r] = 3;
      const termB = drawClicksWithHabit(new Prng(1), b, logit, new Int32Array(1), 1);
      for (let r = 0; r < n; r++) if (b.ts[r] <= b.ts[cut]) expect(termB[r]).toBe(termA[r]);
      expect(Array.from(termB)).not.toEqual(Array.from(termA));
    }
  });
});
