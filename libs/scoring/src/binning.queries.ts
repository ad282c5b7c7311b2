/**
 * SQL text of the streaming scorer's passes. Every pass reads one relation `base` with columns
 * s (0 = fit row, 1 = test row, NULL = neither), y (0/1 event) and x (the feature as readTable reads it;
 * numeric: NaN already NULL).
 */

/** A DOUBLE literal holding exactly `x` (JavaScript's shortest round-trip form, parsed back by DuckDB). */
export function sqlDouble(x: number): string {
  if (Number.isNaN(x)) throw new Error('sqlDouble: NaN has no place in a comparison');
  return `CAST('${String(x)}' AS DOUBLE)`;
}

/** NaN read as missing (DuckDB orders NaN above every number; the in-memory path treats it as null). */
export const withoutNaN = (expr: string): string => `nullif(${expr}, 'NaN'::DOUBLE)`;

/**
 * The pre-bin index of `v` over sorted `cuts` (the number of cuts <= v, as binOf over [...cuts, Infinity]):
 * a balanced tree of comparisons, about log2(cuts) per row.
 */
export function binIndexExpr(v: string, cuts: readonly number[]): string {
  const go = (a: number, b: number): string => {
    if (a === b) return String(a);
    const m = (a + b + 1) >> 1;
    return `CASE WHEN ${v} < ${sqlDouble(cuts[m - 1])} THEN ${go(a, m - 1)} ELSE ${go(m, b)} END`;
  };
  return go(0, cuts.length);
}

/**
 * Values at given ranks of the sorted non-missing fit values, by counting the distinct values and a
 * running sum over them (cheap when values repeat): rows (v, lo, hi) where v holds ranks [lo, hi), only
 * those holding rank 0 or a rank floor(j*n/prebins), j = 1..prebins-1 (n: the non-missing fit rows).
 */
export function ranksByDistinctSql(base: string, n: number, prebins: number): string {
  // smallest j with floor(j*n/P) >= lo is ceil(lo*P/n); the value holds a wanted rank iff that one is < hi
  const j = `greatest(1, (lo * ${prebins} + ${n} - 1) // ${n})`;
  return `WITH d AS (SELECT x AS v, count(*) AS c FROM ${base} WHERE s = 0 AND x IS NOT NULL GROUP BY x),
w AS (SELECT v, c, sum(c) OVER (ORDER BY v ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - c AS lo FROM d)
SELECT v, lo::DOUBLE AS lo, (lo + c)::DOUBLE AS hi FROM w
WHERE lo = 0 OR (${j} <= ${prebins - 1} AND (${j} * ${n}) // ${prebins} < lo + c)`;
}

/** The same rows by numbering the sorted values (cheap when most values are distinct): (v, rank, rank + 1). */
export function ranksBySortSql(base: string, ranks: readonly number[]): string {
  return `SELECT v, rk::DOUBLE AS lo, (rk + 1)::DOUBLE AS hi FROM (
  SELECT x AS v, row_number() OVER (ORDER BY x) - 1 AS rk FROM ${base} WHERE s = 0 AND x IS NOT NULL
) WHERE rk IN (${[...new Set(ranks)].join(', ')})`;
}

/** Rows and events per (range, pre-bin); pre-bin -1 = missing. */
export function numericBinsSql(base: string, cuts: readonly number[]): string {
  return `SELECT s, CASE WHEN x IS NULL THEN -1 ELSE ${binIndexExpr('x', cuts)} END AS b, count(*)::DOUBLE AS c, sum(y)::DOUBLE AS e
FROM ${base} WHERE s IS NOT NULL GROUP BY ALL`;
}

/** Rows and events per (range, value); value NULL = missing. */
export function categoricalCountsSql(base: string): string {
  return `SELECT x, s, count(*)::DOUBLE AS c, sum(y)::DOUBLE AS e FROM ${base} WHERE s IS NOT NULL GROUP BY ALL`;
}

/** (row, id) pairs and their events per (range, list length, id); an empty list is one row of length 0, id NULL. */
export function idPairCountsSql(base: string): string {
  return `SELECT s, k, id, count(*)::DOUBLE AS c, sum(y)::DOUBLE AS e FROM (
  SELECT s, y, len(x)::INTEGER AS k, unnest(CASE WHEN len(x) = 0 THEN [NULL]::INTEGER[] ELSE x END) AS id
  FROM ${base} WHERE s IS NOT NULL
) GROUP BY ALL`;
}
