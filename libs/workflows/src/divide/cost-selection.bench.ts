/**
 * Whether divide's selection changes between measurements made through the platform (a script, not
 * part of the unit suite): the answers of `abacus features costs --model base --measure --json` (the
 * quick start's demo world, feed model) read from files; per file the measured compute shares, and with
 * them divide's MILP selection for tiers 0.7 / 0.5 / 0.3 (values: the world's planted effects; storage
 * and communication: its planted costs), as cost-stability.bench.ts makes it; every pair of files
 * compared (Spearman's rho of the shares, selection unchanged or the features that differ).
 *   npx esbuild libs/workflows/src/divide/cost-selection.bench.ts --bundle --platform=node --packages=external \
 *     --outfile=dist-bench/cost-selection.bench.js && node dist-bench/cost-selection.bench.js SEED ROWS FILE...
 * Prints one JSON line.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { simulateWorld } from '../../../samples/src/simulator/simulator.service';
import { spearman } from './cost-rules';
import { tierSelections } from './bench-selections';

interface LedgerAnswer {
  features: { name: string; compute: { measured: { value: number } | null } }[];
  measurement: { where: { process: string; backend: string; clock: string } | null };
}

async function main(): Promise<void> {
  const seed = Number(process.argv[2]);
  const rows = Number(process.argv[3]);
  const files = process.argv.slice(4);
  if (!Number.isFinite(seed) || !Number.isFinite(rows) || files.length < 2) throw new Error('usage: SEED ROWS FILE FILE...');
  const truth = new Map(simulateWorld({ seed, rows }).groundTruth.features.map((f) => [f.name, f]));
  const runs = files.map((f) => ({ file: path.basename(f), r: JSON.parse(readFileSync(f, 'utf8')) as LedgerAnswer }));
  const names = runs[0]!.r.features.filter((f) => f.compute.measured && truth.has(f.name)).map((f) => f.name);
  const shares = runs.map(({ r }) => names.map((n) => r.features.find((f) => f.name === n)!.compute.measured!.value));
  const selections = (s: number[]) => tierSelections(names, truth, s);
  const sel = await Promise.all(shares.map(selections));
  const pairs = [];
  for (let i = 0; i < runs.length; i++)
    for (let j = i + 1; j < runs.length; j++) {
      const differs = Object.fromEntries(
        Object.keys(sel[i]!).flatMap((t) => {
          const a = new Set(sel[i]![t]);
          const b = new Set(sel[j]![t]);
          const d = [...sel[i]![t]!.filter((n) => !b.has(n)), ...sel[j]![t]!.filter((n) => !a.has(n))];
          return d.length ? [[t, d]] : [];
        }),
      );
      pairs.push({
        files: [runs[i]!.file, runs[j]!.file],
        spearman: +spearman(shares[i]!, shares[j]!).toFixed(3),
        selectionUnchanged: Object.keys(differs).length === 0,
        differs,
      });
    }
  console.log(
    JSON.stringify({
      date: new Date().toISOString(),
      world: { seed, rows },
      inputs: names.length,
      runs: runs.map(({ file, r }) => ({ file, where: r.measurement.where })),
      pairs,
    }),
  );
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
