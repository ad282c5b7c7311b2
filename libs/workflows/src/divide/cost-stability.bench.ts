/**
 * How stable the compute shares are (a script, not part of the unit suite): the demo world's feed
 * model inputs (the simulator's feed configuration: kinds, vocabularies and list lengths as built)
 * measured twice by `measureCompute` in each design (fitted: the cost model fitted to random subsets;
 * paired: each input's model without it beside the full one), each time with fresh models; the two
 * runs' rankings compared by Spearman's rho, and divide's MILP selection for tiers 0.7 / 0.5 / 0.3
 * made with each run's shares (values: the world's planted effects; storage and communication: the
 * world's costs) and compared.
 *   npx esbuild libs/workflows/src/divide/cost-stability.bench.ts --bundle --platform=node --packages=external \
 *     --outfile=dist-bench/cost-stability.bench.js && node dist-bench/cost-stability.bench.js [backend=cpu] [threads=2] [repeats=9] [minMs=0: default] [clock=auto|wall|cpu|device] [designs=fitted,paired] [rows=0: default] [plan=fresh|same]
 * Prints one JSON line.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { flatSamplesToDataset, setAddonPath, setCudaAddonPath } from '@abacus/runtime';
// the simulator's own modules, not the package index (which brings DuckDB): the bench bundles for a node-only GPU host
import { FEATURE_CATALOG } from '../../../samples/src/simulator/feature-catalog';
import { simulateWorld } from '../../../samples/src/simulator/simulator.service';
import { measureCompute, type ComputeInput } from './cost-meter';
import { spearman } from './cost-rules';
import { tierSelections } from './bench-selections';

async function main(): Promise<void> {
  const backend = (process.argv[2] ?? 'cpu') as 'cpu' | 'cuda';
  const threads = Number(process.argv[3] ?? 2);
  const repeats = Number(process.argv[4] ?? 9);
  const minMs = Number(process.argv[5] ?? 0);
  const clockArg = process.argv[6] ?? 'auto';
  const clock = clockArg === 'wall' || clockArg === 'cpu' || clockArg === 'device' ? clockArg : undefined;
  const designs = (process.argv[7] ?? 'fitted,paired').split(',') as ('fitted' | 'paired')[];
  // rows and minMs: 0 = the backend's defaults (defaultComputeRows; 25 ms on the CPU, 100 ms on a GPU)
  const rows = Number(process.argv[8] ?? 0);
  // same: both runs with the ledger's fixed plan (synthetic batch and subsets from seed 7, as two
  // measurements through the API are); fresh: the second run with another seed (stricter)
  const plan = (process.argv[9] ?? 'fresh') as 'same' | 'fresh';
  // the simulated world whose feed model is measured: seed 11, 60,000 rows by default; 7 and 400000 are
  // the quick start's demo world
  const worldSeed = Number(process.argv[10] ?? 11);
  const worldRows = Number(process.argv[11] ?? 60_000);
  // a standalone bundle (libs/runtime/bench/dist): the addons beside it
  if (existsSync(path.join(__dirname, 'abacus_runtime.node'))) {
    setAddonPath(path.join(__dirname, 'abacus_runtime.node'));
    setCudaAddonPath(path.join(__dirname, 'abacus_runtime_cuda.node'));
  }
  const world = simulateWorld({ seed: worldSeed, rows: worldRows });
  const config = FEATURE_CATALOG.filter((f) => f.inConfigOf.includes('feed')).map((f) => f.name);
  const built = flatSamplesToDataset(world.flat, { split: 0, domain: 'feed', include: config });
  const inputs: ComputeInput[] = [
    ...built.numeric.map((name) => ({ name, kind: 'numeric' as const })),
    ...built.slots.map((s) => {
      const slot = built.dataset.slots.find((x) => x.name === s.name)!;
      const rows = slot.offsets.length - 1;
      const meanLen = rows ? slot.offsets[rows]! / rows : 1;
      const spec = FEATURE_CATALOG.find((f) => f.name === s.name);
      return {
        name: s.name,
        kind: spec?.kind === 'multi_id' ? ('multi_id' as const) : ('categorical' as const),
        vocab: s.vocab,
        listLength: meanLen,
      };
    }),
  ];
  const names = inputs.map((i) => i.name);
  const truth = new Map(world.groundTruth.features.map((f) => [f.name, f]));
  const selections = (s: number[]) => tierSelections(names, truth, s);
  const result: Record<string, unknown> = {};
  for (const design of designs) {
    const runs: { m: Awaited<ReturnType<typeof measureCompute>>; seconds: number }[] = [];
    for (let k = 0; k < 2; k++) {
      const t0 = performance.now();
      const m = await measureCompute(inputs, {
        backend,
        threads,
        ...(rows > 0 ? { rows } : {}),
        ...(minMs > 0 ? { minMs } : {}),
        repeats,
        clock,
        design,
        seed: plan === 'same' ? 7 : 7 + 100 * k,
      });
      runs.push({ m, seconds: (performance.now() - t0) / 1000 });
    }
    const shares = runs.map((r) => names.map((n) => r.m.get(n)!.share));
    const medians = runs.map((r) => names.map((n) => r.m.get(n)!.median));
    const below = runs.map((r) => names.filter((n) => r.m.get(n)!.belowResolution));
    const sel = await Promise.all(shares.map(selections));
    result[design] = {
      seconds: runs.map((r) => +r.seconds.toFixed(1)),
      resolution: runs.map((r) => +r.m.get(names[0]!)!.resolution.toFixed(4)),
      belowResolution: below.map((b) => b.length),
      sameBelowResolution: below[0]!.join() === below[1]!.join(),
      spearman: { shares: +spearman(shares[0]!, shares[1]!).toFixed(3), medians: +spearman(medians[0]!, medians[1]!).toFixed(3) },
      // a run whose shares are all the same (all below resolution) ranks nothing: rho says little then
      allTied: shares.map((xs) => xs.every((x) => x === xs[0])),
      selectionUnchanged: Object.keys(sel[0]!).every((t) => sel[0]![t]!.join() === sel[1]![t]!.join()),
      selections: sel,
      how: runs.map((r) => r.m.get(names[names.length - 1]!)!.how),
      perInput: names.map((n, i) => ({
        name: n,
        kind: inputs[i]!.kind,
        share: [shares[0]![i], shares[1]![i]].map((x) => +x!.toFixed(4)),
        median: [medians[0]![i], medians[1]![i]].map((x) => +x!.toFixed(4)),
        interval: runs.map((r) => [r.m.get(n)!.ciLow, r.m.get(n)!.ciHigh].map((x) => +x.toFixed(4))),
      })),
    };
  }
  console.log(
    JSON.stringify({
      date: new Date().toISOString(),
      world: { seed: worldSeed, rows: worldRows },
      host: `${os.cpus().length} cpus, ${os.cpus()[0]?.model ?? '?'}`,
      backend,
      threads,
      repeats,
      minMs: minMs || 'default',
      rows: rows || 'default',
      plan,
      clock: clockArg,
      inputs: inputs.length,
      ...result,
    }),
  );
}

void main();
