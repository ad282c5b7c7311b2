import type { Command } from 'commander';
import { z } from 'zod';
import { runMultiplyBench } from '../bench/multiply-bench';
import { onPlatform, writeJsonOut } from '../bench/private-platform';
import { runSubtractBench } from '../bench/subtract-bench';
import { apiFrom, printJson } from '../cli-context';
import { parseFlags } from '../flags';
import type { RegisterCommand } from './command.types';

const flags = z.object({
  rows: z.coerce.number().int().min(10_000).max(100_000_000).default(1_000_000),
  features: z.coerce.number().int().min(2).max(500).default(40),
  backend: z.enum(['cpu', 'cuda']).default('cpu'),
  seed: z.coerce.number().int().min(0).default(1),
  registerAt: z.string().min(1).optional(),
  simTileRows: z.coerce.number().int().min(10_000).max(20_000_000).default(10_000_000),
  private: z.boolean().optional(),
  threads: z.coerce.number().int().min(0).max(1024).default(0),
  out: z.string().min(1).optional(),
  json: z.boolean().optional(),
});

/** `a,b,c` → ['a', 'b', 'c'] */
const commaList = z.string().transform((v) => v.split(',').map((x) => x.trim()));

const multiplyFlags = z.object({
  config: z.string().min(1).default('configs/examples/multiply.json'),
  seeds: commaList
    .transform((xs) => xs.map(Number))
    .pipe(z.array(z.number().int().min(0)).min(1))
    .optional(),
  strategies: commaList.pipe(z.array(z.enum(['union', 'pretrain_finetune'])).min(1)).optional(),
  reuse: z.boolean().optional(),
  world: z.string().min(1).optional(),
  simSeed: z.coerce.number().int().min(0).default(7),
  rows: z.coerce.number().int().min(10_000).max(20_000_000).default(400_000),
  json: z.boolean().optional(),
});

/**
 * `abacus bench experiment subtract | multiply`: end-to-end time of one experiment through the
 * running api + worker, split by stage.
 */
export const registerBenchExperiment: RegisterCommand = (program) => {
  const bench = program.commands.find((c) => c.name() === 'bench') ?? program.command('bench').description('benchmarks');
  const experiment = bench
    .command('experiment')
    .description('end-to-end benchmarks of experiments through the running api + worker');
  experiment
    .command('subtract')
    .description(
      'one subtract experiment on a simulated world: wall time split into queue wait, sample building, training, scoring, ablation, retraining and database writes',
    )
    .option('--rows <n>', 'impressions to simulate (all lines in one sample set)', '1000000')
    .option('--features <n>', "features of the model (past the simulator's own, per-impression noise columns)", '40')
    .option('--backend <b>', 'cpu | cuda: the backend the worker is expected to run (ABACUS_RUNTIME_BACKEND)', 'cpu')
    .option('--seed <n>', 'world and experiment seed', '1')
    .option(
      '--register-at <dir>',
      'write the samples under this folder as day=N/ partitions and register them by reference (file://), instead of uploading them; or upload the partitions to s3://bucket/prefix/ and register that',
    )
    .option(
      '--sim-tile-rows <n>',
      'impressions simulated at once (the simulator holds them in memory): more --rows repeat that world in later periods, each with clicks drawn again (needs --register-at)',
      '10000000',
    )
    .option(
      '--private',
      'start a private api + one worker (own database, queue prefix and data dir) from dist/ on --backend, instead of using the running API',
    )
    .option('--threads <n>', 'with --private: runtime threads of its worker (0 = all cores)', '0')
    .option('--out <file>', 'also write the JSON to this file')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const opts = parseFlags('bench experiment subtract', flags, raw);
      const log = (l: string) => process.stderr.write(`[bench] ${l}\n`);
      const bench = await onPlatform(
        opts.private
          ? {
              workers: 1,
              name: 'subtract',
              env: { ABACUS_RUNTIME_BACKEND: opts.backend, ABACUS_RUNTIME_THREADS: String(opts.threads) },
            }
          : null,
        () => apiFrom(cmd),
        log,
        (api) => runSubtractBench(api, { ...opts, onStatus: log }),
      );
      const res: Record<string, unknown> = {
        ...bench,
        platform: opts.private
          ? `private api + 1 worker process, backend ${opts.backend}, threads ${opts.threads || 'all'}`
          : 'the running api',
        command: `abacus ${process.argv.slice(2).join(' ')}`,
      };
      writeJsonOut(opts.out, res);
      if (opts.json) return printJson(res);
      const s = res.stages as Record<string, number>;
      process.stdout.write(
        `subtract on ${res.rows} rows x ${res.features} features: ${res.experimentMs} ms in the platform (${res.clientWallMs} ms at the client)\n` +
          Object.entries(s)
            .map(([k, v]) => `  ${k.padEnd(24)} ${String(v).padStart(8)} ms`)
            .join('\n') +
          `\n  ${'other'.padEnd(24)} ${String(res.otherMs).padStart(8)} ms\nslowest: ${res.slowestStage}\n`,
      );
    });
  registerMultiply(experiment);
};

/** `abacus bench experiment multiply`: the demo world's multiply example, by phase. */
function registerMultiply(experiment: Command): void {
  experiment
    .command('multiply')
    .description(
      'the multiply example on the demo world: wall time split into queue wait, union alignment, sample building, training per strategy, compare (bootstrap) and the rest; fresh sample sets unless --reuse',
    )
    .option('--config <file>', 'the multiply experiment file', 'configs/examples/multiply.json')
    .option('--seeds <list>', "training seeds, e.g. 1,2,3 (default: the file's)")
    .option('--strategies <list>', "union,pretrain_finetune (default: the file's)")
    .option(
      '--reuse',
      'use the sample sets the file names (imported when missing), so earlier union files, samples and models may be reused',
    )
    .option('--world <dir>', 'a world written by `abacus sim` (default: simulate one with --sim-seed and --rows)')
    .option('--sim-seed <n>', "the simulated world's seed (the quick start's: 7)", '7')
    .option('--rows <n>', "impressions of the simulated world (the quick start's: 400000)", '400000')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const opts = parseFlags('bench experiment multiply', multiplyFlags, raw);
      const res = await runMultiplyBench(apiFrom(cmd), {
        ...opts,
        reuse: opts.reuse === true,
        onStatus: (l) => process.stderr.write(`[bench] ${l}\n`),
      });
      if (opts.json) return printJson({ ...res, command: `abacus ${process.argv.slice(2).join(' ')}` });
      process.stdout.write(formatMultiply(res));
    });
}

function formatMultiply(res: Awaited<ReturnType<typeof runMultiplyBench>>): string {
  const p = res.phases;
  const row = (k: string, v: number, note = '') => `  ${k.padEnd(28)} ${String(v).padStart(8)} ms${note ? `  ${note}` : ''}`;
  const r = res.reused;
  // fresh sets: whatever was reused was written earlier in this same experiment (union and pretrain share a source group's file and samples)
  const where = res.fresh ? ' (earlier in this run)' : '';
  return [
    `multiply on ${res.businessLine} (${res.models.length} models x ${res.seeds.length} seeds): ${res.experimentMs} ms in the platform (${res.clientWallMs} ms at the client)`,
    row('queueWait', p.queueWaitMs),
    row('unionAlign', p.unionAlignMs, `${r.unionFiles.reused} of ${r.unionFiles.of} union files reused${where}`),
    row('sampleBuild', p.sampleBuildMs, `${r.builtSamples.reused} of ${r.builtSamples.of} built sample sets reused${where}`),
    ...Object.entries(p.trainingMs).map(([k, v]) => row(`training ${k}`, v)),
    row('training (all)', res.trainingTotalMs, `${r.models.reused} of ${r.models.of} models reused${where}`),
    row('compare', p.compareMs, res.bootstrapMs === null ? '' : `bootstrap ${res.bootstrapMs} ms`),
    row('other', p.otherMs),
    `slowest: ${res.slowestPhase}${res.overlapping ? ' (trials overlapped: phase sums exceed the wall time)' : ''}`,
    `sample sets: ${res.sampleSets.map((s) => `${s.used} (${s.rows} rows, ${s.imported ? 'imported' : 'reused'})`).join(', ')}`,
    '',
  ].join('\n');
}
