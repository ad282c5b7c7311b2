import { formatSimSummary, runSim } from '@abacus/samples';
import { z } from 'zod';
import { parseFlags } from '../flags';
import type { RegisterCommand } from './command.types';

const simFlags = z.object({
  seed: z.coerce.number().int().min(0).max(0xffffffff),
  rows: z.coerce.number().int().min(1000).max(20_000_000),
  out: z.string().min(1),
  unrelatedLine: z.boolean().optional(),
  derivedEffects: z.boolean().optional(),
  json: z.boolean().optional(),
});

export const registerSim: RegisterCommand = (program) => {
  program
    .command('sim')
    .description('simulate a synthetic world (three business lines, ground truth) and write it as Parquet')
    .requiredOption('--seed <n>', 'PRNG seed (0..2^32-1)')
    .requiredOption('--rows <n>', 'impressions to simulate (1000..20000000)')
    .requiredOption('--out <dir>', 'output directory')
    .option('--unrelated-line', "add a fourth line ('ads', 30% more rows) whose planted effects are unrelated to the others'")
    .option(
      '--derived-effects',
      'plant effects only expressions carry: a cross of d_region and d_slot, the ratio d_spend / d_visits, a 7-day (user, category) click habit',
    )
    .option('--json', 'print the summary as JSON')
    .action(async (raw: Record<string, unknown>) => {
      const flags = parseFlags('sim', simFlags, raw);
      const summary = await runSim(flags);
      process.stdout.write(flags.json ? `${JSON.stringify(summary, null, 2)}\n` : `${formatSimSummary(summary)}\n`);
    });
};
