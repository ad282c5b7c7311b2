/**
 * How stable the compute shares are (a script, not part of the unit suite): the demo world's feed
 * model inputs (the simulator's feed configuration: kinds, vocabularies and list lengths as built)
 * measured twice by `measureCompute`, each time with fresh models, and the two rankings compared by
 * Spearman's rho — the shares in force (below resolution counted as 0) and, from the same timings, the
 * earlier rule (best of each side, share = (best_all - best_without) / best_all).
 *   npx esbuild libs/workflows/src/divide/cost-stability.bench.ts --bundle --platform=node --packages=external \
 *     --outfile=dist-bench/cost-stability.bench.js && node dist-bench/cost-stability.bench.js [backend=cpu] [threads=2] [repeats=9] [minMs=25] [clock=wall|cpu]
 * Prints one JSON line.
 */
import os from 'node:os';
import { flatSamplesToDataset } from '@abacus/runtime';
import { FEATURE_CATALOG, simulateWorld } from '@abacus/samples';
import { measureCompute, type ComputeInput } from './cost-meter';
import { bestOf, computeShare, spearman } from './cost-rules';

async function main(): Promise<void> {
  const backend = (process.argv[2] ?? 'cpu') as 'cpu' | 'cuda';
  const threads = Number(process.argv[3] ?? 2);
  const repeats = Number(process.argv[4] ?? 9);
  const minMs = Number(process.argv[5] ?? 25);
  const clock = (process.argv[6] ?? 'wall') as 'wall' | 'cpu';
  const world = simulateWorld({ seed: 11, rows: 60_000 });
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
  const runs: { m: Awaited<ReturnType<typeof measureCompute>>; seconds: number }[] = [];
  for (let k = 0; k < 2; k++) {
    const t0 = performance.now();
    const m = await measureCompute(inputs, { backend, threads, repeats, minMs, clock });
    runs.push({ m, seconds: (performance.now() - t0) / 1000 });
  }
  const names = inputs.map((i) => i.name);
  const shares = runs.map((r) => names.map((n) => r.m.get(n)!.share));
  const medians = runs.map((r) => names.map((n) => r.m.get(n)!.median));
  const old = runs.map((r) => names.map((n) => computeShare(bestOf(r.m.get(n)!.allMs).best, bestOf(r.m.get(n)!.withoutMs).best)));
  const below = runs.map((r) => names.filter((n) => r.m.get(n)!.belowResolution));
  console.log(
    JSON.stringify({
      date: new Date().toISOString(),
      host: `${os.cpus().length} cpus, ${os.cpus()[0]?.model ?? '?'}`,
      backend,
      threads,
      repeats,
      minMs,
      clock,
      inputs: inputs.length,
      seconds: runs.map((r) => +r.seconds.toFixed(1)),
      resolution: runs.map((r) => +r.m.get(names[0]!)!.resolution.toFixed(4)),
      belowResolution: below.map((b) => b.length),
      sameBelowResolution: below[0]!.join() === below[1]!.join(),
      spearman: {
        shares: +spearman(shares[0]!, shares[1]!).toFixed(3),
        medians: +spearman(medians[0]!, medians[1]!).toFixed(3),
        earlierRuleBestOf: +spearman(old[0]!, old[1]!).toFixed(3),
      },
      perInput: names.map((n, i) => ({
        name: n,
        kind: inputs[i]!.kind,
        share: [shares[0]![i], shares[1]![i]].map((x) => +x!.toFixed(4)),
        median: [medians[0]![i], medians[1]![i]].map((x) => +x!.toFixed(4)),
        interval: runs.map((r) => [r.m.get(n)!.ciLow, r.m.get(n)!.ciHigh].map((x) => +x.toFixed(4))),
        earlierRule: [old[0]![i], old[1]![i]].map((x) => +x!.toFixed(4)),
      })),
    }),
  );
}

void main();
