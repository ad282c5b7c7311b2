import { describe, expect, it } from 'vitest';
import type { ColumnarDataset } from '@abacus/runtime';
import { numericCorrelations } from './numeric-correlation';

/** the pairs' |r| computed straight off the row-major block (the definition) */
function reference(ds: ColumnarDataset, names: string[]) {
  const w = ds.numericNames.length;
  const cols = names.map((n) => ds.numericNames.indexOf(n)).filter((j) => j >= 0);
  const n = ds.rows;
  const mean = cols.map((j) => {
    let s = 0;
    for (let i = 0; i < n; i++) s += ds.numeric[i * w + j];
    return s / n;
  });
  const sd = cols.map((j, c) => {
    let v = 0;
    for (let i = 0; i < n; i++) v += (ds.numeric[i * w + j] - mean[c]) ** 2;
    return Math.sqrt(v / n);
  });
  const out: { a: string; b: string; r: number }[] = [];
  for (let x = 0; x < cols.length; x++)
    for (let y = x + 1; y < cols.length; y++) {
      if (!sd[x] || !sd[y]) continue;
      let s = 0;
      for (let i = 0; i < n; i++) s += (ds.numeric[i * w + cols[x]] - mean[x]) * (ds.numeric[i * w + cols[y]] - mean[y]);
      out.push({ a: ds.numericNames[cols[x]], b: ds.numericNames[cols[y]], r: Math.abs(s / n / (sd[x] * sd[y])) });
    }
  return out.sort((p, q) => q.r - p.r || p.a.localeCompare(q.a));
}

describe('numericCorrelations', () => {
  it('gives the definition’s numbers to the last bit, a constant column left out', async () => {
    let s = 7;
    const u = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
    const rows = 5000;
    const names = ['a', 'b', 'c', 'const', 'd'];
    const numeric = new Float32Array(rows * names.length);
    for (let i = 0; i < rows; i++) {
      const a = u();
      numeric.set([a, a * 0.7 + u() * 0.3, u() * 100, 3, -a + u() * 0.01], i * names.length);
    }
    const ds: ColumnarDataset = { rows, numericNames: names, numeric, slots: [], labels: new Float32Array(rows) };
    const got = await numericCorrelations(ds, ['d', 'a', 'b', 'c', 'const', 'missing']);
    expect(got).toEqual(reference(ds, ['d', 'a', 'b', 'c', 'const', 'missing']));
    expect(got[0]).toMatchObject({ a: 'd', b: 'a' });
    expect(got[0]!.r).toBeGreaterThan(0.99);
    expect(got.some((p) => p.a === 'const' || p.b === 'const')).toBe(false);
  });

  it('a subset’s pairs are the whole set’s pairs of its members, in the same order (a pair’s r does not depend on the others)', async () => {
    let s = 11;
    const u = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
    const rows = 3000;
    const names = ['p', 'q', 'r', 's', 't', 'v'];
    const numeric = new Float32Array(rows * names.length);
    for (let i = 0; i < rows; i++) {
      const a = u();
      const b = u();
      // ties in |r| too: t and v are the same column up to sign
      numeric.set([a, a + u() * 0.5, b, b * 0.2 + u(), -a, a], i * names.length);
    }
    const ds: ColumnarDataset = { rows, numericNames: names, numeric, slots: [], labels: new Float32Array(rows) };
    const all = await numericCorrelations(ds, names);
    for (const among of [['p', 'r', 't', 'v'], ['q', 's'], ['v', 't', 'p'], names.slice(1)]) {
      const ordered = names.filter((n) => among.includes(n));
      const keep = new Set(ordered);
      expect(all.filter((x) => keep.has(x.a) && keep.has(x.b))).toEqual(await numericCorrelations(ds, ordered));
    }
  });
});
