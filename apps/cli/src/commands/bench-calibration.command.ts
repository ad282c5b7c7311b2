import type { Command } from 'commander';
import { z } from 'zod';
import { runCalibrationBench } from '../bench/calibration-bench';
import { onPlatform, writeJsonOut } from '../bench/private-platform';
import { apiFrom, printJson } from '../cli-context';
import { parseFlags } from '../flags';
import { CliError, type RegisterCommand } from './command.types';

const flags = z.object({
  worlds: z.coerce.number().int().min(1).max(100_000).default(20),
  rows: z.coerce.number().int().min(2_000).max(10_000_000).default(50_000),
  concurrency: z.coerce.number().int().min(1).max(256).default(1),
  seed: z.coerce.number().int().min(0).default(1),
  seeds: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'a comma-separated list of world seeds, e.g. 2022,2040')
    .transform((v) => v.split(',').map(Number))
    .optional(),
  only: z.enum(['add', 'subtract']).optional(),
  retrain: z.enum(['auto', 'warm', 'scratch']).optional(),
  subtractSpec: z
    .string()
    .transform((v, ctx) => {
      try {
        const o: unknown = JSON.parse(v);
        if (o && typeof o === 'object' && !Array.isArray(o)) return o as Record<string, unknown>;
      } catch {
        // reported below
      }
      ctx.addIssue({ code: 'custom', message: 'a JSON object of subtract spec fields, e.g. {"warmMaxSteps":0}' });
      return z.NEVER;
    })
    .optional(),
  resume: z.string().min(1).optional(),
  out: z.string().min(1).optional(),
  private: z.boolean().optional(),
  backend: z.enum(['auto', 'cpu', 'cuda']).optional(),
  json: z.boolean().optional(),
});

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** `abacus bench calibration`: false-adopt, adopt and pruning rates of the verdict rules over many generated worlds. */
export const registerBenchCalibration: RegisterCommand = (program) => {
  const bench = program.commands.find((c) => c.name() === 'bench') ?? program.command('bench').description('benchmarks');
  bench
    .command('calibration')
    .description(
      'generates N flat worlds with planted strong, weak, redundant and noise features and one useful plus one pure-noise add candidate each, ' +
        'runs add and subtract on each through the API, and reports the false-adopt rate, the useful-adopt rate, strong features removed, ' +
        'the share of noise removed and how often the confirmed drop stays within maxDrop, with 95% intervals',
    )
    .option('--worlds <n>', 'worlds to generate', '20')
    .option('--rows <n>', 'rows per world (each world varies it by up to 25%)', '50000')
    .option('--concurrency <k>', 'worlds in flight at once (with --private: also the worker processes)', '1')
    .option('--seed <n>', "the first world's seed (world i: seed + i)", '1')
    .option('--seeds <list>', 'these worlds (comma-separated seeds) instead of --worlds from --seed')
    .option('--only <workflow>', 'run only add or only subtract on each world')
    .option('--retrain <mode>', "subtract's retraining checks: auto, warm or scratch (default: the spec's, auto)")
    .option('--subtract-spec <json>', 'more subtract spec fields for every world, e.g. \'{"warmMaxSteps":0}\' (checked by the API)')
    .option('--resume <file>', 'JSON lines of finished worlds: appended as they finish, skipped when rerun')
    .option('--out <file>', 'also write the JSON to this file')
    .option(
      '--private',
      'start a private api + workers (own database, queue prefix and data dir) from dist/ instead of using the running API',
    )
    .option('--backend <backend>', 'with --private: the runtime backend of its workers (auto, cpu or cuda; default auto)')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('bench calibration', flags, raw);
      const log = (l: string) => process.stderr.write(`[bench] ${l}\n`);
      if (o.backend && !o.private)
        throw new CliError('bench calibration: --backend needs --private (the running workers have their own)');
      const res = await onPlatform(
        o.private
          ? {
              workers: o.concurrency,
              name: 'calibration',
              env: { ABACUS_RUNTIME_THREADS: '1', ...(o.backend ? { ABACUS_RUNTIME_BACKEND: o.backend } : {}) },
            }
          : null,
        () => apiFrom(cmd),
        log,
        (api) => runCalibrationBench(api, { ...o, onStatus: log }),
      );
      const doc = {
        ...res,
        platform: o.private
          ? `private api + ${o.concurrency} worker process(es), backend ${o.backend ?? 'auto'}`
          : 'the running api',
        command: `abacus ${process.argv.slice(2).join(' ')}`,
      };
      writeJsonOut(o.out, doc);
      if (o.json) return printJson(doc);
      const s = res.summary;
      const line = (k: keyof typeof s.rates, what: string) => {
        const r = s.rates[k];
        const t = s.targets[k] as { met: boolean | null; min?: number; max?: number };
        if (t.met === null) return `  ${what.padEnd(34)} not run`;
        const target = t.max !== undefined ? `≤ ${pct(t.max)}` : `≥ ${pct(t.min!)}`;
        return `  ${what.padEnd(34)} ${String(r.k).padStart(5)}/${String(r.n).padEnd(5)} ${pct(r.rate).padStart(6)}  [${pct(r.ciLow)}, ${pct(r.ciHigh)}]  target ${target} ${t.met ? 'met' : 'MISSED'}`;
      };
      process.stdout.write(
        [
          `${s.succeeded} of ${s.worlds} worlds succeeded in ${Math.round(res.wallMs / 1000)} s`,
          line('falseAdoptRate', 'noise candidate adopted'),
          line('usefulAdoptRate', 'useful candidate adopted'),
          line('strongRemovedRate', 'strong features removed'),
          line('noiseRemovedShare', 'noise features removed'),
          line('confirmedWithinMaxDropRate', 'confirmed test drop within maxDrop'),
          `  confirmed - estimated drop: ${s.drops.confirmedMinusEstimated ? `${s.drops.confirmedMinusEstimated.mean.toFixed(5)} [${s.drops.confirmedMinusEstimated.ciLow.toFixed(5)}, ${s.drops.confirmedMinusEstimated.ciHigh.toFixed(5)}]` : 'n/a'}`,
          '',
        ].join('\n'),
      );
    });
};
