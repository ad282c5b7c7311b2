import type { Command } from 'commander';
import { z } from 'zod';
import { columnName, labelSemanticsSchema, lineName } from '@abacus/catalog';
import { apiFrom, printJson, table } from '../cli-context';
import { parseFlags } from '../flags';
import { CliError, type RegisterCommand } from './command.types';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const listFlags = z.object({
  line: lineName.optional(),
  labelSemantics: labelSemanticsSchema.optional(),
  hasColumns: z
    .string()
    .min(1)
    .optional()
    .transform((s) => (s ? s.split(',').map((c) => c.trim()) : []))
    .pipe(z.array(columnName)),
  json: z.boolean().optional(),
});

const showFlags = z.object({
  ref: z.string().min(1).max(200),
  line: lineName.optional(),
  json: z.boolean().optional(),
});

export interface BankEntry {
  id: string;
  name: string;
  businessLine: string;
  owner: string;
  rowCount: number;
  labelColumn: string;
  labelSemantics: string;
  labelStats: { events: number | null; nonEvents: number | null; positive: string } | null;
  dataVersion: string | null;
  timeColumn: string | null;
  timeMin: number | null;
  timeMax: number | null;
  keyColumns: string[];
  schema: { name: string; kind: string; sourceType: string }[];
  sharingPolicy: { shareWith: string[] };
  createdAt: string;
}

function query(o: { line?: string; labelSemantics?: string; hasColumns: string[] }): string {
  const q = new URLSearchParams({ pageSize: '500' });
  if (o.line) q.set('businessLine', o.line);
  if (o.labelSemantics) q.set('labelSemantics', o.labelSemantics);
  if (o.hasColumns.length) q.set('hasColumns', o.hasColumns.join(','));
  return q.toString();
}

const rate = (s: BankEntry['labelStats']) =>
  s && s.events !== null && s.nonEvents !== null && s.events + s.nonEvents > 0 ? (s.events / (s.events + s.nonEvents)).toFixed(4) : '';
const shared = (s: BankEntry) => (s.sharingPolicy.shareWith.length ? s.sharingPolicy.shareWith.join(',') : 'private');

/** The text of `bank show`. */
export function renderBankEntry(s: BankEntry): string {
  const lines = [
    `${s.businessLine}/${s.name}  (${s.id})`,
    `  owner: ${s.owner}`,
    `  rows: ${s.rowCount}`,
    `  label: ${s.labelColumn} (${s.labelSemantics})${s.labelStats && s.labelStats.events !== null ? `, ${s.labelStats.events} events / ${s.labelStats.nonEvents} non-events, rate ${rate(s.labelStats)}` : s.labelStats ? ', events not counted (registered by reference)' : ''}`,
    `  time: ${s.timeColumn ? `${s.timeColumn} from ${s.timeMin} to ${s.timeMax}` : '(none)'}`,
    `  keys: ${s.keyColumns.join(', ') || '(none)'}`,
    `  shared with: ${shared(s)}`,
    `  data version: ${s.dataVersion ?? '(unknown)'}`,
    `  created: ${s.createdAt}`,
    '',
    table(
      s.schema.map((c) => [c.name, c.kind, c.sourceType]),
      ['column', 'kind', 'type'],
    ),
  ];
  return lines.join('\n');
}

export const registerBank: RegisterCommand = (program) => {
  const bank = program.command('bank').description('the DataBank: sample sets of every line you may read, and what they hold');

  bank
    .command('list')
    .description('search sample sets you may read (your lines and those shared with them)')
    .option('--line <line>', 'only this business line')
    .option('--label-semantics <meaning>', 'only this label meaning, e.g. exposure->click')
    .option('--has-columns <columns>', 'comma-separated columns the set must all contain')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('bank list', listFlags, raw);
      const page = await apiFrom(cmd).get<{ items: BankEntry[]; total: number }>(`/sample-sets?${query(o)}`);
      if (o.json) return printJson(page);
      process.stdout.write(
        `${table(
          page.items.map((s) => [
            s.id,
            s.businessLine,
            s.name,
            s.labelSemantics,
            s.rowCount,
            rate(s.labelStats),
            s.schema.length,
            shared(s),
            s.dataVersion,
          ]),
          ['id', 'line', 'name', 'label', 'rows', 'rate', 'columns', 'shared with', 'version'],
        )}\n`,
      );
    });

  bank
    .command('show')
    .description('one sample set: columns and kinds, label stats, time range, sharing policy, owner, version')
    .argument('<ref>', 'sample set id, or name (with --line when several lines use it)')
    .option('--line <line>', 'the business line of a named set')
    .option('--json', 'print JSON')
    .action(async (ref: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('bank show', showFlags, { ...raw, ref }, ['ref']);
      const api = apiFrom(cmd);
      let s: BankEntry;
      if (UUID.test(o.ref)) s = await api.get<BankEntry>(`/sample-sets/${o.ref}`);
      else {
        const page = await api.get<{ items: BankEntry[] }>(`/sample-sets?${query({ line: o.line, hasColumns: [] })}`);
        const hits = page.items.filter((x) => x.name === o.ref);
        if (!hits.length) throw new CliError(`no sample set named "${o.ref}"${o.line ? ` in ${o.line}` : ''} that you may read`);
        if (hits.length > 1)
          throw new CliError(`"${o.ref}" names sample sets in ${hits.map((h) => h.businessLine).join(', ')}: add --line`);
        s = hits[0];
      }
      if (o.json) return printJson(s);
      process.stdout.write(`${renderBankEntry(s)}\n`);
    });
};
