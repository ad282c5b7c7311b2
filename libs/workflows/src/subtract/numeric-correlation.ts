import type { ColumnarDataset } from '@abacus/runtime';

/**
 * |Pearson r| of every pair of the named numeric inputs over the rows (e.g. the training split).
 * Yields to the event loop after each column's statistics and each pair: at 10M rows x 85 numeric
 * inputs the pairs are some 20 G multiply-adds, a worker that never yields loses its job lock, and a
 * prune makes them beside its GPU checks, which this thread coordinates. The columns are copied
 * out of the row-major block first (the same values and the same sums in the same order: a pair's
 * pass reads two contiguous columns instead of striding through every input; 3-5x faster).
 */
export async function numericCorrelations(ds: ColumnarDataset, names: string[]): Promise<{ a: string; b: string; r: number }[]> {
  const w = ds.numericNames.length;
  const cols = names.map((n) => ds.numericNames.indexOf(n)).filter((j) => j >= 0);
  const n = ds.rows;
  const mean = new Float64Array(cols.length);
  const sd = new Float64Array(cols.length);
  const col = cols.map((j) => {
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = ds.numeric[i * w + j];
    return v;
  });
  for (const [c, v] of col.entries()) {
    let s = 0;
    for (let i = 0; i < n; i++) s += v[i];
    mean[c] = s / n;
    let q = 0;
    for (let i = 0; i < n; i++) q += (v[i] - mean[c]) ** 2;
    sd[c] = Math.sqrt(q / n);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  const out: { a: string; b: string; r: number }[] = [];
  for (let x = 0; x < cols.length; x++) {
    for (let y = x + 1; y < cols.length; y++) {
      if (!sd[x] || !sd[y]) continue;
      let s = 0;
      const a = col[x];
      const b = col[y];
      const ma = mean[x];
      const mb = mean[y];
      for (let i = 0; i < n; i++) s += (a[i] - ma) * (b[i] - mb);
      out.push({ a: ds.numericNames[cols[x]], b: ds.numericNames[cols[y]], r: Math.abs(s / n / (sd[x] * sd[y])) });
      // a pair at a time: made beside a prune's GPU checks, it must not hold this thread for long
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  return out.sort((p, q) => q.r - p.r || p.a.localeCompare(q.a));
}
