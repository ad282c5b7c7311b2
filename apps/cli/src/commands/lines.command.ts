import type { Command } from 'commander';
import { z } from 'zod';
import { createBusinessLineSchema } from '@abacus/catalog';
import { apiFrom, printJson, table } from '../cli-context';
import { parseFlags } from '../flags';
import type { RegisterCommand } from './command.types';

const createFlags = createBusinessLineSchema.extend({ json: z.boolean().optional() });

interface Line {
  name: string;
  description: string;
  owner: string;
}

export const registerLines: RegisterCommand = (program) => {
  const lines = program.command('lines').description('business lines (domains)');
  lines
    .command('create')
    .description('create a business line')
    .argument('<name>', 'lower-case name, e.g. feed')
    .option('--description <text>', 'what the line is', '')
    .option('--json', 'print JSON')
    .action(async (name: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('lines create', createFlags, { ...raw, name }, ['name']);
      const l = await apiFrom(cmd).post<Line>('/business-lines', { name: o.name, description: o.description });
      if (o.json) return printJson(l);
      process.stdout.write(`created business line ${l.name}\n`);
    });
  lines
    .command('list')
    .description('list business lines')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ls = await apiFrom(cmd).get<Line[]>('/business-lines');
      if (o.json) return printJson(ls);
      process.stdout.write(
        `${table(
          ls.map((l) => [l.name, l.owner, l.description]),
          ['name', 'owner', 'description'],
        )}\n`,
      );
    });
};
