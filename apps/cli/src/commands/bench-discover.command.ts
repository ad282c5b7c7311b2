import type { Command } from 'commander';
import { z } from 'zod';
import { runDiscoverBench } from '../bench/discover-bench';
import { onPlatform, writeJsonOut } from '../bench/private-platform';
import { apiFrom, printJson } from '../cli-context';
import { parseFlags } from '../flags';
import { CliError, type RegisterCommand } from './command.types';

const flags = z.object({
  worlds: z.coerce.number().int().min(1).max(10_000).default(50),
  rows: z.coerce.number().int().min(20_000).max(5_000_000).default(150_000),
  seed: z.coerce.number().int().min(0).default(1),
  concurrency: z.coerce.number().int().min(1).max(64).default(1),
  maxCandidates: z.coerce.number().int().min(1).max(5000).default(300),
  top: z.coerce.number().int().min(1).max(30).default(5),
  seeds: z.coerce.number().int().min(3).max(20).default(10),
  windows: z
    .string()
    .default('7d')
    .transform((s) => s.split(',').map((x) => x.trim())),
  resume: z.string().min(1).optional(),
  out: z.string().min(1).optional(),
  private: z.boolean().optional(),
  backend: z.enum(['auto', 'cpu', 'cuda']).optional(),
  json: z.boolean().optional(),
});

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** `abacus bench discover`: how often discover adopts the planted derived effects, and noise, over many worlds. */
export const registerBenchDiscover: RegisterCommand = (program) => {
  const bench = program.commands.find((c) => c.name() === 'bench') ?? program.command('bench').description('benchmarks');
  bench
    .command('discover')
    .description(
      'simulates N worlds with planted derived effects (a cross, a ratio, a 7-day click habit), runs discover on the feed line of each through the API, ' +
        'and reports how often each planted expression is adopted and how often an expression over noise columns only is, with 95% intervals; ' +
        'each world also checks that an expression reading the label is refused',
    )
    .option('--worlds <n>', 'worlds to simulate', '50')
    .option('--rows <n>', 'impressions per world (feed gets about half)', '150000')
    .option('--seed <n>', "the first world's seed (world i: seed + i)", '1')
    .option('--concurrency <k>', 'worlds in flight at once (with --private: also the worker processes)', '1')
    .option('--max-candidates <n>', "discover's maxCandidates", '300')
    .option('--top <k>', "discover's topK", '5')
    .option('--seeds <n>', "discover's seeds (the verified comparison)", '10')
    .option('--windows <w,…>', "discover's windows", '7d')
    .option('--resume <file>', 'JSON lines of finished worlds: appended as they finish, skipped when rerun')
    .option('--out <file>', 'also write the JSON to this file')
    .option('--private', 'start a private api + workers (own database, queue prefix and data dir) from dist/ instead of using the running API')
    .option('--backend <backend>', 'with --private: the runtime backend of its workers (auto, cpu or cuda; default auto)')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('bench discover', flags, raw);
      const log = (l: string) => process.stderr.write(`[bench] ${l}\n`);
      if (o.backend && !o.private) throw new CliError('bench discover: --backend needs --private (the running workers have their own)');
      const res = await onPlatform(
        o.private
          ? { workers: o.concurrency, name: 'discover', env: { ...(o.backend ? { ABACUS_RUNTIME_BACKEND: o.backend } : {}) } }
          : null,
        () => apiFrom(cmd),
        log,
        (api) =>
          runDiscoverBench(api, {
            worlds: o.worlds,
            rows: o.rows,
            seed: o.seed,
            concurrency: o.concurrency,
            maxCandidates: o.maxCandidates,
            topK: o.top,
            seeds: o.seeds,
            windows: o.windows,
            ...(o.resume ? { resume: o.resume } : {}),
            onStatus: log,
          }),
      );
      const doc = {
        ...res,
        platform: o.private ? `private api + ${o.concurrency} worker process(es), backend ${o.backend ?? 'auto'}` : 'the running api',
        command: `abacus ${process.argv.slice(2).join(' ')}`,
      };
      writeJsonOut(o.out, doc);
      if (o.json) return printJson(doc);
      const s = res.summary;
      const r = (x: { k: number; n: number; rate: number; ciLow: number; ciHigh: number }) =>
        `${String(x.k).padStart(4)}/${String(x.n).padEnd(4)} ${pct(x.rate).padStart(6)} [${pct(x.ciLow)}, ${pct(x.ciHigh)}]`;
      process.stdout.write(
        [
          `${s.succeeded} of ${s.worlds} worlds succeeded in ${Math.round(res.wallMs / 1000)} s`,
          ...(['cross', 'ratio', 'rate'] as const).map(
            (k) => `  planted ${k.padEnd(6)} adopted ${r(s.planted[k].adopted)}  sent on ${r(s.planted[k].sentOn)}`,
          ),
          `  worlds adopting a noise-only expression ${r(s.noiseAdoptedWorlds)} (target ≤ 1%: ${s.targets.noiseAdopted.met ? 'met' : 'MISSED'})`,
          `  noise-only expressions adopted of those sent on ${r(s.noiseAdoptedOfSent)}`,
          `  label-reading expression refused in ${s.leakRefused} of ${s.succeeded} worlds`,
          `  planted adopted ≥ 90% in every effect: ${s.targets.plantedAdopted.met ? 'met' : 'MISSED'}`,
          '',
        ].join('\n'),
      );
    });
};
