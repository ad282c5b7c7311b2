import type { Command } from 'commander';
import { apiFrom, printJson, table } from '../cli-context';
import type { RegisterCommand } from './command.types';

interface SampleSet {
  id: string;
  name: string;
  businessLine: string;
  rowCount: number;
  labelColumn: string;
  timeColumn: string | null;
  schema: { name: string; kind: string }[];
}

export const registerSamples: RegisterCommand = (program) => {
  const samples = program.command('samples').description('sample sets: labelled tables a model trains on');

  samples
    .command('import')
    .description('upload a CSV or Parquet sample set through the API')
    .argument('<file>', 'a .csv or .parquet file')
    .requiredOption('--name <name>', 'sample set name (unique within the business line)')
    .requiredOption('--domain <line>', 'business line it belongs to')
    .requiredOption('--label <column>', 'the binary label column')
    .option('--time <column>', 'event time column (enables time splits and PSI)')
    .option('--keys <columns>', 'comma-separated key columns (never used as features)')
    .option('--share-with <lines>', "comma-separated business lines allowed to borrow it ('*' = all)")
    .option('--json', 'print the created sample set as JSON')
    .action(async (file: string, o: Record<string, string | boolean | undefined>, cmd: Command) => {
      const s = await apiFrom(cmd).upload<SampleSet>('/sample-sets', file, {
        name: o.name as string,
        businessLine: o.domain as string,
        label: o.label as string,
        time: o.time as string | undefined,
        keys: o.keys as string | undefined,
        shareWith: o.shareWith as string | undefined,
      });
      if (o.json) return printJson(s);
      process.stdout.write(
        `imported sample set ${s.businessLine}/${s.name}\n  id: ${s.id}\n  rows: ${s.rowCount}\n  label: ${s.labelColumn}${s.timeColumn ? `, time: ${s.timeColumn}` : ''}\n  columns: ${s.schema.length}\n`,
      );
    });

  samples
    .command('list')
    .description('list sample sets')
    .option('--domain <line>', 'only this business line')
    .option('--json', 'print JSON')
    .action(async (o: { domain?: string; json?: boolean }, cmd: Command) => {
      const q = o.domain ? `?businessLine=${encodeURIComponent(o.domain)}&pageSize=500` : '?pageSize=500';
      const page = await apiFrom(cmd).get<{ items: SampleSet[]; total: number }>(`/sample-sets${q}`);
      if (o.json) return printJson(page);
      process.stdout.write(
        `${table(
          page.items.map((s) => [s.id, s.businessLine, s.name, s.rowCount, s.labelColumn, s.schema.length]),
          ['id', 'line', 'name', 'rows', 'label', 'columns'],
        )}\n`,
      );
    });
};
