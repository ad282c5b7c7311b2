import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { z } from 'zod';
import { runLoadBench } from '../bench/load-bench';
import { printJson } from '../cli-context';
import { CliError, type RegisterCommand } from './command.types';

const flags = z.object({
  experiments: z.coerce.number().int().min(1).max(10_000).default(500),
  clients: z.coerce.number().int().min(1).max(200).default(20),
  readers: z.coerce.number().int().min(0).max(200).default(5),
  workers: z.coerce.number().int().min(1).max(16).default(2),
  rows: z.coerce.number().int().min(200).max(1_000_000).default(3000),
  subtractShare: z.coerce.number().min(0).max(1).default(0.05),
  seed: z.coerce.number().int().min(0).default(1),
  json: z.boolean().optional(),
  out: z.string().min(1).optional(),
});

/** `abacus bench load`: many experiments from concurrent clients against a private api + workers. */
export const registerBenchLoad: RegisterCommand = (program) => {
  const bench = program.commands.find((c) => c.name() === 'bench') ?? program.command('bench').description('benchmarks');
  bench
    .command('load')
    .description(
      'load on a private platform (own database, queue prefix and data dir; api + workers started from dist/ on loopback): ' +
        'experiments from concurrent clients while others read; reports API throughput, p50/p99 latency, and checks every experiment ends exactly once with the workers sharing the trials',
    )
    .option('--experiments <n>', 'experiments to submit', '500')
    .option('--clients <n>', 'concurrent submitting clients', '20')
    .option('--readers <n>', 'concurrent clients reading lists, status and results', '5')
    .option('--workers <n>', 'worker processes', '2')
    .option('--rows <n>', 'rows of the sample set every experiment uses', '3000')
    .option('--subtract-share <f>', 'share of subtract experiments (the rest are score)', '0.05')
    .option('--seed <n>', 'sample seed', '1')
    .option('--json', 'print JSON')
    .option('--out <file>', 'also write the JSON to this file')
    .action(async (raw: Record<string, unknown>, _cmd: Command) => {
      const f = flags.safeParse(raw);
      if (!f.success)
        throw new CliError(`invalid options: ${f.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; ')}`);
      const { json, out, ...o } = f.data;
      const res = await runLoadBench({ ...o, onStatus: (l) => process.stderr.write(`[bench] ${l}\n`) });
      const doc = { ...res, command: `abacus ${process.argv.slice(2).join(' ')}` };
      if (out) {
        fs.mkdirSync(path.dirname(out), { recursive: true });
        fs.writeFileSync(out, `${JSON.stringify(doc, null, 2)}\n`);
      }
      if (json) return printJson(doc);
      const a = res.api as { requestsPerSecond: number; latencyMs: Record<string, { p50: number; p99: number; n: number }> };
      process.stdout.write(
        `${res.submitted} experiments in ${res.wallMs} ms; API ${a.requestsPerSecond} requests/s\n` +
          Object.entries(a.latencyMs)
            .map(([op, l]) => `  ${op.padEnd(8)} n=${l.n} p50 ${l.p50} ms  p99 ${l.p99} ms`)
            .join('\n') +
          `\nchecks: ${JSON.stringify(res.checks)}\n`,
      );
      const c = res.checks as Record<string, boolean | number>;
      if (!c.everyExperimentEnded || !c.everyExperimentEndedOnce || c.trialsStartedMoreThanOnce) process.exitCode = 1;
    });
};
