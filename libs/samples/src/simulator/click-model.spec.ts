import { describe, expect, it } from 'vitest';
import { plantClickModel, plantUnrelatedClickModel } from './click-model';
import { generateContexts, generateItems, generateUsers } from './entity-generator';
import { generateImpressions, type GeneratedImpressions } from './impression-generator';
import { Prng } from './prng';
import { UNRELATED_DOMAIN } from './world-constants';

function corr(x: ArrayLike<number>, y: ArrayLike<number>): number {
  const n = x.length;
  let sx = 0;
  let sy = 0;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let r = 0; r < n; r++) {
    sx += x[r];
    sy += y[r];
    sxy += x[r] * y[r];
    sxx += x[r] * x[r];
    syy += y[r] * y[r];
  }
  return (sxy / n - (sx / n) * (sy / n)) / Math.sqrt((sxx / n - (sx / n) ** 2) * (syy / n - (sy / n) ** 2));
}

describe('plantUnrelatedClickModel', () => {
  const root = new Prng(9);
  const items = generateItems(root.fork(1), 500);
  const users = generateUsers(root.fork(2), 1_000, items);
  const contexts = generateContexts(root.fork(3));
  const imp = generateImpressions(root.fork(4), 30_000, users, items);
  const related = plantClickModel(root.fork(5), imp, users, items, contexts);
  // the same rows seen as one line (domain index 0), for the unrelated model
  const asOneLine: GeneratedImpressions = {
    userRow: imp.userRow,
    table: { ...imp.table, domainIndex: new Uint8Array(imp.table.rows), domains: [UNRELATED_DOMAIN.name] },
  };

  it("plants a logit about uncorrelated with the related lines' on the same rows, calibrated to its own CTR", () => {
    const relatedNoBias = Float64Array.from(related.logit, (v, r) => v - related.domainBias[imp.table.domainIndex[r]]);
    for (const seed of [1, 2, 3, 4, 5]) {
      const un = plantUnrelatedClickModel(new Prng(seed), asOneLine, users, items, contexts, UNRELATED_DOMAIN);
      expect(Math.abs(corr(relatedNoBias, un.logit)), `seed ${seed}`).toBeLessThan(0.2);
      // not noise: the planted effects spread the logit about as much as the related lines' do
      const std = Math.sqrt(un.logit.reduce((s, v) => s + (v - un.domainBias[0]) ** 2, 0) / un.logit.length);
      expect(std).toBeGreaterThan(1);
      let ctr = 0;
      for (const v of un.logit) ctr += 1 / (1 + Math.exp(-v));
      expect(ctr / un.logit.length).toBeCloseTo(UNRELATED_DOMAIN.targetCtr, 3);
      expect([...un.realisedEffect.keys()].sort()).toEqual([...related.realisedEffect.keys()].sort());
    }
  });
});
