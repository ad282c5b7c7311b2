import { simulateWorld } from './simulator.service';
import { writeWorld } from './world-writer';

export interface SimSummary {
  out: string;
  seed: number;
  rows: number;
  testFrom: number;
  files: { path: string; rows: number; bytes: number }[];
  domains: { name: string; impressions: number; clickRate: number; upperBoundTestAuc: number; unrelated?: true }[];
  featuresByRole: Record<string, number>;
  elapsedMs: { simulate: number; write: number; total: number };
}

/** Simulates and writes a world; what `abacus sim` runs. */
export async function runSim(options: {
  seed: number;
  rows: number;
  out: string;
  unrelatedLine?: boolean;
  derivedEffects?: boolean;
}): Promise<SimSummary> {
  const t0 = performance.now();
  const world = simulateWorld({
    seed: options.seed,
    rows: options.rows,
    unrelatedLine: options.unrelatedLine ?? false,
    derivedEffects: options.derivedEffects ?? false,
  });
  const t1 = performance.now();
  const manifest = await writeWorld(world, options.out);
  const t2 = performance.now();
  const featuresByRole: Record<string, number> = {};
  for (const f of world.groundTruth.features) featuresByRole[f.role] = (featuresByRole[f.role] ?? 0) + 1;
  return {
    out: options.out,
    seed: world.groundTruth.seed,
    rows: world.groundTruth.rows,
    testFrom: world.groundTruth.testFrom,
    files: [
      ...manifest.files.map((f) => ({ path: f.path, rows: f.rows, bytes: f.bytes })),
      { path: 'ground_truth.json', rows: world.groundTruth.features.length, bytes: 0 },
      { path: 'manifest.json', rows: manifest.files.length, bytes: 0 },
    ],
    domains: world.groundTruth.domains.map((d) => ({ ...d })),
    featuresByRole,
    elapsedMs: { simulate: Math.round(t1 - t0), write: Math.round(t2 - t1), total: Math.round(t2 - t0) },
  };
}

export function formatSimSummary(s: SimSummary): string {
  const pad = (v: string, n: number): string => v.padEnd(n);
  const lines = [
    `world seed ${s.seed}, ${s.domains.reduce((a, d) => a + d.impressions, 0)} impressions, test split from ts >= ${s.testFrom} (last 3 of 14 days) -> ${s.out}`,
    '',
    `${pad('line', 8)}${pad('impressions', 13)}${pad('ctr', 9)}upper-bound test AUC`,
    ...s.domains.map(
      (d) =>
        `${pad(d.name, 8)}${pad(String(d.impressions), 13)}${pad((100 * d.clickRate).toFixed(2) + '%', 9)}${d.upperBoundTestAuc.toFixed(4)}${d.unrelated ? '  (unrelated to the other lines)' : ''}`,
    ),
    '',
    `features: ${Object.entries(s.featuresByRole)
      .map(([r, n]) => `${n} ${r}`)
      .join(', ')}`,
    '',
    'files:',
    ...s.files.map(
      (f) => `  ${pad(f.path, 24)}${f.path.endsWith('.json') ? '' : `${f.rows} rows, ${(f.bytes / 1e6).toFixed(1)} MB`}`,
    ),
    '',
    `elapsed: simulate ${(s.elapsedMs.simulate / 1000).toFixed(2)} s, write ${(s.elapsedMs.write / 1000).toFixed(2)} s, total ${(s.elapsedMs.total / 1000).toFixed(2)} s`,
  ];
  return lines.join('\n');
}
