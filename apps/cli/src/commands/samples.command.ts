import type { Command } from 'commander';
import { z } from 'zod';
import { columnName, labelSemanticsSchema, lineName, objectName } from '@abacus/catalog';
import { apiFrom, printJson, table } from '../cli-context';
import { parseFlags } from '../flags';
import type { RegisterCommand } from './command.types';

const importFlags = z.object({
  file: z.string().min(1),
  name: objectName,
  domain: lineName,
  label: columnName,
  positive: z.string().min(1).max(200).optional(),
  time: columnName.optional(),
  keys: z.string().min(1).optional(),
  shareWith: z.string().min(1).optional(),
  labelSemantics: labelSemanticsSchema.optional(),
  allowNonFinite: z.boolean().optional(),
  json: z.boolean().optional(),
});

const listFlags = z.object({ domain: lineName.optional(), json: z.boolean().optional() });

interface SampleSet {
  id: string;
  name: string;
  businessLine: string;
  rowCount: number;
  labelColumn: string;
  timeColumn: string | null;
  schema: { name: string; kind: string }[];
  warnings?: string[];
}

export const registerSamples: RegisterCommand = (program) => {
  const samples = program.command('samples').description('sample sets: labelled tables a model trains on');

  samples
    .command('import')
    .description('upload a CSV or Parquet sample set through the API')
    .argument('<file>', 'a .csv or .parquet file')
    .requiredOption('--name <name>', 'sample set name (unique within the business line)')
    .requiredOption('--domain <line>', 'business line it belongs to')
    .requiredOption('--label <column>', 'the label column: 0/1 or true/false, or any two values with --positive')
    .option('--positive <value>', 'the label value that counts as the event (label = value == V), e.g. --positive 7')
    .option('--time <column>', 'event time column (enables time splits and PSI)')
    .option('--keys <columns>', 'comma-separated key columns (never used as features)')
    .option('--share-with <lines>', "comma-separated business lines allowed to borrow it ('*' = all)")
    .option('--label-semantics <meaning>', 'what the label means, event->outcome (default exposure->click)')
    .option('--allow-non-finite', 'store NaN / Infinity in numeric columns as missing values (default: reject the file)')
    .option('--json', 'print the created sample set as JSON')
    .action(async (file: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('samples import', importFlags, { ...raw, file }, ['file']);
      const s = await apiFrom(cmd).upload<SampleSet>('/sample-sets', file, {
        name: o.name,
        businessLine: o.domain,
        label: o.label,
        positive: o.positive,
        time: o.time,
        keys: o.keys,
        shareWith: o.shareWith,
        labelSemantics: o.labelSemantics,
        allowNonFinite: o.allowNonFinite ? 'true' : undefined,
      });
      if (o.json) return printJson(s);
      process.stdout.write(
        `imported sample set ${s.businessLine}/${s.name}\n  id: ${s.id}\n  rows: ${s.rowCount}\n  label: ${s.labelColumn}${s.timeColumn ? `, time: ${s.timeColumn}` : ''}\n  columns: ${s.schema.length}\n`,
      );
      for (const w of s.warnings ?? []) process.stderr.write(`warning: ${w}\n`);
    });

  samples
    .command('list')
    .description('list sample sets')
    .option('--domain <line>', 'only this business line')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('samples list', listFlags, raw);
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
