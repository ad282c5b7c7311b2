import type { ColumnarDataset } from '@abacus/runtime';

/**
 * |Pearson r| of every pair of the named numeric inputs over the rows (e.g. the training split).
 * Yields to the event loop after each column's pairs: at 10M rows x 85 numeric inputs the pairs are
 * some 20 G multiply-adds, and a worker that never yields loses its job lock.
 */
export async function numericCorrelations(ds: ColumnarDataset, names: string[]): Promise<{ a: string; b: string; r: number }[]> {
  const w = ds.numericNames.length;
  const cols = names.map((n) => ds.numericNames.indexOf(n)).filter((j) => j >= 0);
  const n = ds.rows;
  const mean = new Float64Array(cols.length);
  const sd = new Float64Array(cols.length);
  cols.forEach((j, c) => {
    let s = 0;
    for (let i = 0; i < n; i++) s += ds.numeric[i * w + j];
    mean[c] = s / n;
    let v = 0;
    for (let i = 0; i < n; i++) v += (ds.numeric[i * w + j] - mean[c]) ** 2;
    sd[c] = Math.sqrt(v / n);
  });
  const out: { a: string; b: string; r: number }[] = [];
  for (let x = 0; x < cols.length; x++) {
    for (let y = x + 1; y < cols.length; y++) {
      if (!sd[x] || !sd[y]) continue;
      let s = 0;
      for (let i = 0; i < n; i++) s += (ds.numeric[i * w + cols[x]] - mean[x]) * (ds.numeric[i * w + cols[y]] - mean[y]);
      out.push({ a: ds.numericNames[cols[x]], b: ds.numericNames[cols[y]], r: Math.abs(s / n / (sd[x] * sd[y])) });
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return out.sort((p, q) => q.r - p.r || p.a.localeCompare(q.a));
}
