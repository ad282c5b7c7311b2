import type { Command } from 'commander';
import { apiFrom, printJson, table } from '../cli-context';
import type { RegisterCommand } from './command.types';

interface Feature {
  id: string;
  name: string;
  businessLine: string;
  kind: string;
  sourceTable: string | null;
  entityKey: string | null;
}

export const registerFeatures: RegisterCommand = (program) => {
  const features = program.command('features').description('the feature registry and entity-keyed feature tables');
  features
    .command('import-table')
    .description('upload an entity-keyed feature table (CSV/Parquet); each column but the key and time becomes a feature')
    .argument('<file>', 'a .csv or .parquet file')
    .requiredOption('--name <name>', 'table name, e.g. users')
    .requiredOption('--domain <line>', 'business line that owns it')
    .requiredOption('--key <column>', 'entity key column, e.g. user_id')
    .option('--time <column>', 'snapshot time column for point-in-time joins')
    .option('--json', 'print JSON')
    .action(async (file: string, o: Record<string, string | boolean | undefined>, cmd: Command) => {
      const r = await apiFrom(cmd).upload<{ table: { id: string; name: string; rowCount: number }; features: Feature[] }>(
        '/feature-tables',
        file,
        {
          name: o.name as string,
          businessLine: o.domain as string,
          entityKey: o.key as string,
          time: o.time as string | undefined,
        },
      );
      if (o.json) return printJson(r);
      process.stdout.write(
        `imported feature table ${r.table.name} (${r.table.rowCount} rows), registered ${r.features.length} feature(s)\n`,
      );
    });
  features
    .command('list')
    .description('list registered features')
    .option('--domain <line>', 'only this business line')
    .option('--json', 'print JSON')
    .action(async (o: { domain?: string; json?: boolean }, cmd: Command) => {
      const q = new URLSearchParams({ pageSize: '500' });
      if (o.domain) q.set('businessLine', o.domain);
      const page = await apiFrom(cmd).get<{ items: Feature[]; total: number }>(`/features?${q}`);
      if (o.json) return printJson(page);
      process.stdout.write(
        `${table(
          page.items.map((f) => [f.businessLine, f.name, f.kind, f.sourceTable, f.entityKey]),
          ['line', 'name', 'kind', 'table', 'key'],
        )}\n`,
      );
    });
};
