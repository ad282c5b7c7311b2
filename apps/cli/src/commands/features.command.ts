import type { Command } from 'commander';
import { z } from 'zod';
import { columnName, lineName, objectName } from '@abacus/catalog';
import { apiFrom, printJson, table } from '../cli-context';
import { parseFlags } from '../flags';
import type { RegisterCommand } from './command.types';

const importFlags = z.object({
  file: z.string().min(1),
  name: objectName,
  domain: lineName,
  key: columnName,
  time: columnName.optional(),
  allowNonFinite: z.boolean().optional(),
  json: z.boolean().optional(),
});

const listFlags = z.object({ domain: lineName.optional(), json: z.boolean().optional() });

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
    .option('--allow-non-finite', 'store NaN / Infinity in numeric columns as missing values (default: reject the file)')
    .option('--json', 'print JSON')
    .action(async (file: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('features import-table', importFlags, { ...raw, file }, ['file']);
      const r = await apiFrom(cmd).upload<{
        table: { id: string; name: string; rowCount: number };
        features: Feature[];
        warnings?: string[];
      }>('/feature-tables', file, {
        name: o.name,
        businessLine: o.domain,
        entityKey: o.key,
        time: o.time,
        allowNonFinite: o.allowNonFinite ? 'true' : undefined,
      });
      if (o.json) return printJson(r);
      process.stdout.write(
        `imported feature table ${r.table.name} (${r.table.rowCount} rows), registered ${r.features.length} feature(s)\n`,
      );
      for (const w of r.warnings ?? []) process.stderr.write(`warning: ${w}\n`);
    });
  features
    .command('list')
    .description('list registered features')
    .option('--domain <line>', 'only this business line')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('features list', listFlags, raw);
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
