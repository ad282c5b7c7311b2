import type { Command } from 'commander';
import { z } from 'zod';
import { columnName, labelSemanticsSchema, lineName, objectName } from '@abacus/catalog';
import { apiFrom, printJson, table } from '../cli-context';
import { parseFlags } from '../flags';
import { CliError, type RegisterCommand } from './command.types';

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

const registerFlags = importFlags.omit({ file: true, allowNonFinite: true }).extend({
  url: z.string().min(1).max(2000),
  partition: columnName.optional(),
  from: z.string().min(1).max(200).optional(),
  to: z.string().min(1).max(200).optional(),
});

const commaSplit = (v: string | undefined) =>
  v
    ? v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)
    : undefined;

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
  location?: string | null;
  objects?: { key: string }[] | null;
  dataVersion?: string | null;
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
    .command('register')
    .description('register a Parquet sample set where it is (S3-compatible store or shared file system), without copying it')
    .argument(
      '<url>',
      's3://bucket/prefix/ or file:///shared/path/ (a folder of .parquet files, hive-partitioned or not, or one file)',
    )
    .requiredOption('--name <name>', 'sample set name (unique within the business line)')
    .requiredOption('--domain <line>', 'business line it belongs to')
    .requiredOption('--label <column>', 'the label column: 0/1 or true/false')
    .option('--positive <value>', 'the label value that counts as the event (default 1 / true)')
    .option('--time <column>', 'event time column (enables time splits and PSI)')
    .option('--keys <columns>', 'comma-separated key columns (never used as features)')
    .option('--share-with <lines>', "comma-separated business lines allowed to borrow it ('*' = all)")
    .option('--label-semantics <meaning>', 'what the label means, event->outcome (default exposure->click)')
    .option('--partition <column>', 'a hive partition column (dt=.../ folders) to take a range of, with --from / --to')
    .option('--from <value>', 'first partition value taken (inclusive)')
    .option('--to <value>', 'last partition value taken (inclusive)')
    .option('--json', 'print the registered sample set as JSON')
    .action(async (url: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('samples register', registerFlags, { ...raw, url }, ['url']);
      if ((o.from !== undefined || o.to !== undefined) && !o.partition) {
        throw new CliError('samples register: --from / --to need --partition <column>');
      }
      const s = await apiFrom(cmd).post<SampleSet>('/sample-sets/register', {
        url: o.url,
        name: o.name,
        businessLine: o.domain,
        label: o.label,
        ...(o.positive ? { positive: o.positive } : {}),
        ...(o.time ? { time: o.time } : {}),
        ...(o.keys ? { keys: commaSplit(o.keys) } : {}),
        ...(o.shareWith ? { shareWith: commaSplit(o.shareWith) } : {}),
        ...(o.labelSemantics ? { labelSemantics: o.labelSemantics } : {}),
        ...(o.partition
          ? { partitions: { column: o.partition, ...(o.from ? { from: o.from } : {}), ...(o.to ? { to: o.to } : {}) } }
          : {}),
      });
      if (o.json) return printJson(s);
      process.stdout.write(
        `registered sample set ${s.businessLine}/${s.name} (by reference, not copied)\n  id: ${s.id}\n  location: ${s.location}\n  objects: ${s.objects?.length ?? 0}\n  rows: ${s.rowCount}\n  label: ${s.labelColumn}${s.timeColumn ? `, time: ${s.timeColumn}` : ''}\n  columns: ${s.schema.length}\n  data version: ${s.dataVersion}\n`,
      );
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
