import { describe, expect, it } from 'vitest';
import { exactAuc } from '../metrics/exact-auc';
import { FEATURE_CATALOG } from './feature-catalog';
import { simulateWorld } from './simulator.service';

describe('simulateWorld', () => {
  const world = simulateWorld({ seed: 42, rows: 20_000 });

  it('is a pure function of the seed', () => {
    const again = simulateWorld({ seed: 42, rows: 20_000 });
    expect(Buffer.from(again.flat.trueLogit.buffer).equals(Buffer.from(world.flat.trueLogit.buffer))).toBe(true);
    expect(Array.from(again.impressions.click)).toEqual(Array.from(world.impressions.click));
    const other = simulateWorld({ seed: 43, rows: 20_000 });
    expect(Array.from(other.impressions.click)).not.toEqual(Array.from(world.impressions.click));
  });

  it('has three lines of different sizes with CTR in 5-15% and an upper-bound AUC well above chance', () => {
    const gt = world.groundTruth;
    expect(gt.domains.map((d) => d.name)).toEqual(['feed', 'search', 'mall']);
    expect(gt.domains.reduce((s, d) => s + d.impressions, 0)).toBe(20_000);
    expect(gt.domains[0].impressions).toBeGreaterThan(gt.domains[1].impressions);
    expect(gt.domains[1].impressions).toBeGreaterThan(gt.domains[2].impressions);
    for (const d of gt.domains) {
      expect(d.clickRate).toBeGreaterThan(0.05);
      expect(d.clickRate).toBeLessThan(0.15);
      expect(d.upperBoundTestAuc).toBeGreaterThan(0.7);
      expect(d.upperBoundTestAuc).toBeLessThan(1);
    }
    // the planted logit's AUC, recomputed from the flat table
    const feed = gt.domains[0];
    const auc = exactAuc(
      world.flat.trueLogit,
      world.flat.label,
      (r) => world.flat.domain[r] === 'feed' && world.flat.split[r] === 1,
    );
    expect(auc).toBeCloseTo(feed.upperBoundTestAuc, 5);
  });

  it('ground truth covers every feature with roles, costs and add-candidates', () => {
    const gt = world.groundTruth;
    expect(gt.features.length).toBeGreaterThanOrEqual(30);
    expect(gt.features.map((f) => f.name)).toEqual(FEATURE_CATALOG.map((f) => f.name));
    const roles = new Set(gt.features.map((f) => f.role));
    expect(roles).toEqual(new Set(['strong', 'weak', 'redundant', 'noise']));
    for (const f of gt.features) {
      if (f.role === 'noise' || f.role === 'redundant') expect(f.effect).toBe(0);
      else expect(f.effect).toBeGreaterThan(0.03);
      if (f.role === 'redundant') expect(gt.features.find((g) => g.name === f.copyOf)?.role).toBe('strong');
      if (f.kind !== 'numeric') expect(f.vocab).toBeGreaterThan(1);
      expect(f.costs.computeCost).toBeGreaterThan(0);
    }
    const multi = gt.features.filter((f) => f.kind === 'multi_id');
    const numeric = gt.features.filter((f) => f.kind === 'numeric');
    expect(Math.min(...multi.map((f) => f.costs.fetchBytesPerRequest))).toBeGreaterThan(
      Math.max(...numeric.map((f) => f.costs.fetchBytesPerRequest)),
    );
    const single = gt.features.filter((f) => f.inConfigOf.length === 1 && f.role !== 'noise');
    expect(single.length).toBeGreaterThanOrEqual(2);
    expect(gt.testFrom).toBe(11 * 86_400);
  });

  it('flat table is the point-in-time join of the raw tables', () => {
    const { flat, impressions, users, items } = world;
    expect(flat.rows).toBe(20_000);
    expect(flat.numeric.length + flat.categorical.length + flat.multiId.length).toBe(FEATURE_CATALOG.length);
    for (let r = 1; r < flat.rows; r++) expect(impressions.ts[r]).toBeGreaterThanOrEqual(impressions.ts[r - 1]);
    const act = flat.numeric.find((c) => c.name === 'u_activity_7d')!.values;
    const userAct = users.numeric.find((c) => c.name === 'u_activity_7d')!.values;
    const recent = flat.multiId.find((c) => c.name === 'u_recent_cats')!;
    const userRecent = users.multiId.find((c) => c.name === 'u_recent_cats')!;
    const price = flat.numeric.find((c) => c.name === 'i_price')!.values;
    const itemPrice = items.numeric.find((c) => c.name === 'i_price')!.values;
    for (let r = 0; r < flat.rows; r += 97) {
      // latest snapshot with snapshotTs <= ts for this user
      let best = -1;
      for (let s = 0; s < users.rows; s++) {
        if (users.keys[s] === impressions.userId[r] && users.snapshotTs![s] <= impressions.ts[r]) {
          if (best < 0 || users.snapshotTs![s] > users.snapshotTs![best]) best = s;
        }
      }
      expect(act[r]).toBe(userAct[best]);
      expect(Array.from(recent.ids.subarray(recent.offsets[r], recent.offsets[r + 1]))).toEqual(
        Array.from(userRecent.ids.subarray(userRecent.offsets[best], userRecent.offsets[best + 1])),
      );
      expect(price[r]).toBeCloseTo(itemPrice[impressions.itemId[r]], 3);
      expect(flat.split[r]).toBe(impressions.ts[r] >= world.groundTruth.testFrom ? 1 : 0);
      expect(flat.label[r]).toBe(impressions.click[r]);
    }
    // user features really change between daily snapshots
    let changed = 0;
    const nUsers = users.rows / 14;
    for (let u = 0; u < nUsers; u++) if (userAct[u] !== userAct[nUsers + u]) changed++;
    expect(changed).toBeGreaterThan(nUsers / 2);
  });

  it('with unrelatedLine: adds the ads line on top and leaves the three related lines exactly as they are', () => {
    const w = simulateWorld({ seed: 42, rows: 20_000, unrelatedLine: true });
    const gt = w.groundTruth;
    expect(gt.domains.map((d) => d.name)).toEqual(['feed', 'search', 'mall', 'ads']);
    expect(gt.domains.filter((d) => d.unrelated).map((d) => d.name)).toEqual(['ads']);
    expect(gt.domains.slice(0, 3)).toEqual(world.groundTruth.domains);
    expect({ ...gt, domains: [] }).toEqual({ ...world.groundTruth, domains: [] });
    const ads = gt.domains[3];
    expect(ads.impressions).toBe(6_000);
    expect(ads.clickRate).toBeGreaterThan(0.08);
    expect(ads.clickRate).toBeLessThan(0.12);
    expect(ads.upperBoundTestAuc).toBeGreaterThan(0.7);
    expect(w.flat.rows).toBe(26_000);
    const n = 20_000;
    expect(Buffer.from(w.flat.trueLogit.buffer, 0, 4 * n).equals(Buffer.from(world.flat.trueLogit.buffer))).toBe(true);
    expect(Buffer.from(w.impressions.click.subarray(0, n)).equals(Buffer.from(world.impressions.click))).toBe(true);
    expect(Array.from(w.impressions.userId.subarray(0, n))).toEqual(Array.from(world.impressions.userId));
    for (let r = n; r < w.flat.rows; r++) {
      expect(w.impressions.impressionId[r]).toBe(r);
      expect(w.flat.domain[r]).toBe('ads');
      if (r > n) expect(w.impressions.ts[r]).toBeGreaterThanOrEqual(w.impressions.ts[r - 1]);
    }
  });

  it('rejects bad options', () => {
    expect(() => simulateWorld({ seed: -1, rows: 10_000 })).toThrow();
    expect(() => simulateWorld({ seed: 1, rows: 10 })).toThrow();
  });
});
