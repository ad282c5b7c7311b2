import type { Command } from 'commander';
import { z } from 'zod';
import { runSubtractBench } from '../bench/subtract-bench';
import { apiFrom, printJson } from '../cli-context';
import { parseFlags } from '../flags';
import type { RegisterCommand } from './command.types';

const flags = z.object({
  rows: z.coerce.number().int().min(10_000).max(20_000_000).default(1_000_000),
  features: z.coerce.number().int().min(2).max(500).default(40),
  backend: z.enum(['cpu', 'cuda']).default('cpu'),
  seed: z.coerce.number().int().min(0).default(1),
  json: z.boolean().optional(),
});

/** `abacus bench experiment subtract`: end-to-end time of one subtract experiment, by stage. */
export const registerBenchExperiment: RegisterCommand = (program) => {
  const bench = program.commands.find((c) => c.name() === 'bench') ?? program.command('bench').description('benchmarks');
  bench
    .command('experiment')
    .description('end-to-end benchmarks of experiments through the running api + worker')
    .command('subtract')
    .description(
      'one subtract experiment on a simulated world: wall time split into queue wait, sample building, training, scoring, ablation, retraining and database writes',
    )
    .option('--rows <n>', 'impressions to simulate (all lines in one sample set)', '1000000')
    .option('--features <n>', "features of the model (past the simulator's own, per-impression noise columns)", '40')
    .option('--backend <b>', 'cpu | cuda: the backend the worker is expected to run (ABACUS_RUNTIME_BACKEND)', 'cpu')
    .option('--seed <n>', 'world and experiment seed', '1')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const opts = parseFlags('bench experiment subtract', flags, raw);
      const res = await runSubtractBench(apiFrom(cmd), { ...opts, onStatus: (l) => process.stderr.write(`[bench] ${l}\n`) });
      if (opts.json) return printJson({ ...res, command: `abacus ${process.argv.slice(2).join(' ')}` });
      const s = res.stages as Record<string, number>;
      process.stdout.write(
        `subtract on ${res.rows} rows x ${res.features} features: ${res.experimentMs} ms in the platform (${res.clientWallMs} ms at the client)\n` +
          Object.entries(s)
            .map(([k, v]) => `  ${k.padEnd(24)} ${String(v).padStart(8)} ms`)
            .join('\n') +
          `\n  ${'other'.padEnd(24)} ${String(res.otherMs).padStart(8)} ms\nslowest: ${res.slowestStage}\n`,
      );
    });
};
