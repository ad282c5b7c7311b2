import type { Command } from 'commander';
import { apiFrom, printJson, table } from '../cli-context';
import type { RegisterCommand } from './command.types';

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
    .action(async (name: string, o: { description: string; json?: boolean }, cmd: Command) => {
      const l = await apiFrom(cmd).post<Line>('/business-lines', { name, description: o.description });
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
