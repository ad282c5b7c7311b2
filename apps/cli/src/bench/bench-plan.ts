/** The k-th (from 1) per-impression noise column the experiment benches write next to the simulator's columns. */
export const noiseColumn = (k: number): string => `bench_noise_${k}`;

const NOISE = /^bench_noise_\d+$/;

/**
 * The first `n` features of a bench table: the simulator's own in catalog order, then as many
 * per-impression noise columns (bench_noise_1, …) as it takes to make up `n`.
 */
export function baseFeatures(catalog: readonly string[], n: number): string[] {
  const extra = Math.max(0, n - catalog.length);
  return [...catalog.slice(0, n), ...Array.from({ length: extra }, (_, k) => noiseColumn(k + 1))];
}

/** What the bench needs of the simulator's ground truth: a feature's name and planted effect (0: none). */
export interface CatalogFeature {
  name: string;
  effect: number;
}

export interface AddCandidates {
  /** every candidate: the simulator's first, then the noise columns */
  names: string[];
  /** simulator features with a planted effect that the base model leaves out */
  simulator: string[];
  /** per-impression noise columns, numbered after the base model's own */
  noise: string[];
  /** noise columns the table needs in all (the base model's and the candidates') */
  noiseColumns: number;
}

/**
 * `n` add candidates for a base model: the simulator's features with a real planted effect that
 * the base leaves out, strongest first (catalog order among equals), then per-impression noise
 * columns numbered after the base's own to make up the count.
 */
export function addCandidates(catalog: readonly CatalogFeature[], base: readonly string[], n: number): AddCandidates {
  const inBase = new Set(base);
  const simulator = catalog
    .map((f, i) => ({ ...f, i }))
    .filter((f) => f.effect > 0 && !inBase.has(f.name))
    .sort((a, b) => b.effect - a.effect || a.i - b.i)
    .slice(0, n)
    .map((f) => f.name);
  const baseNoise = base.filter((f) => NOISE.test(f)).length;
  const noise = Array.from({ length: n - simulator.length }, (_, k) => noiseColumn(baseNoise + k + 1));
  return { names: [...simulator, ...noise], simulator, noise, noiseColumns: baseNoise + noise.length };
}

/**
 * `n` budget tiers for divide, as fractions of the full model's cost: 1 (tier 0, the full model),
 * then n - 1 budgets evenly from 0.7 down to 0.3 (n = 4: the spec's default, 1, 0.7, 0.5, 0.3;
 * n = 2: 1, 0.5).
 */
export function budgetTiers(n: number): number[] {
  if (!Number.isInteger(n) || n < 1) throw new Error(`budgetTiers: ${n} is not a number of tiers`);
  if (n === 1) return [1];
  if (n === 2) return [1, 0.5];
  return [1, ...Array.from({ length: n - 1 }, (_, k) => Math.round((0.7 - (0.4 * k) / (n - 2)) * 1000) / 1000)];
}
