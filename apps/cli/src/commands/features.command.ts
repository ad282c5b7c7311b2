import type { Command } from 'commander';
import { z } from 'zod';
import { columnName, lineName, objectName } from '@abacus/catalog';
import { apiFrom, parseIntOption, printJson, table } from '../cli-context';
import { parseFlags } from '../flags';
import { CliError, type RegisterCommand } from './command.types';

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
  expression?: {
    text: string;
    sampleSet: string;
    lineage: { columns: string[]; refs: string[]; tables?: { feature: string; table: string }[]; historySeconds: number | null };
  } | null;
}

const exprFlags = z.object({
  name: objectName,
  domain: lineName,
  samples: z.string().min(1).max(200),
  expr: z.string().min(1).max(4000),
  kind: z.enum(['numeric', 'categorical', 'multi_id']).optional(),
  description: z.string().max(2000).optional(),
  json: z.boolean().optional(),
});

const costsFlags = z.object({
  line: lineName.optional(),
  model: z.string().min(1).max(220).optional(),
  measure: z.boolean().optional(),
  candidates: z.number().int().min(1).max(1_000_000).optional(),
  on: z.enum(['auto', 'api', 'worker', 'gpu']).optional(),
  json: z.boolean().optional(),
});

interface Figure {
  value: number | null;
  unit: string;
  source: 'measured' | 'declared' | null;
  measuredAt: string | null;
}

export interface CostLedgerView {
  businessLine: string | null;
  model: { name: string; version: number } | null;
  candidatesPerRequest: number;
  features: {
    name: string;
    businessLine: string;
    kind: string;
    entity: string | null;
    storage: Figure;
    communication: Figure;
    compute: Figure;
    noCost: boolean;
  }[];
  unregistered: string[];
  measurement?: {
    backend: string;
    elapsedMs: number;
    measured: string[];
    skipped: { name: string; reason: string }[];
    where?: { process: 'api' | 'worker'; host: string; pid: number; backend: string; clock: string; gpu: string | null } | null;
  };
}

const num = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 1 ? x.toFixed(2) : x.toFixed(4));

/** One ledger cell: value with (m)easured or (d)eclared and the date; "-" without a figure. */
export function costCell(f: Figure, percent = false): string {
  if (f.value === null || f.source === null) return '-';
  const v = percent && f.source === 'measured' ? `${(f.value * 100).toFixed(1)}%` : num(f.value);
  return `${v} (${f.source === 'measured' ? 'm' : 'd'}${f.measuredAt ? ` ${f.measuredAt.slice(0, 10)}` : ''})`;
}

/** The ledger as a table: a row per feature; a feature without any figure says "no cost". */
export function formatCostLedger(l: CostLedgerView): string {
  const head = [
    l.model ? `model ${l.model.name} v${l.model.version}` : l.businessLine ? `line ${l.businessLine}` : 'all lines',
    `${l.candidatesPerRequest} candidates per request`,
    'storage: bytes/entity, communication: bytes/request, compute: share of one prediction; (m) measured, (d) declared',
  ].join('; ');
  const rows = l.features.map((f) =>
    f.noCost
      ? [f.businessLine, f.name, f.kind, f.entity ?? '?', 'no cost', '', '']
      : [
          f.businessLine,
          f.name,
          f.kind,
          f.entity ?? '?',
          costCell(f.storage),
          costCell(f.communication),
          costCell(f.compute, true),
        ],
  );
  const lines = [head, table(rows, ['line', 'feature', 'kind', 'entity', 'storage', 'communication', 'compute'])];
  if (l.unregistered.length) lines.push(`not in the registry (no ledger row): ${l.unregistered.join(', ')}`);
  if (l.measurement) {
    const w = l.measurement.where;
    const at = w ? ` (timed in the ${w.process} on ${w.host}${w.gpu ? `, ${w.gpu}` : ''}, ${w.clock} clock)` : ' (storage only)';
    lines.push(
      `measured ${l.measurement.measured.length} feature(s) on ${l.measurement.backend}${at} in ${(l.measurement.elapsedMs / 1000).toFixed(1)} s`,
    );
    for (const s of l.measurement.skipped) lines.push(`not measured: ${s.name}: ${s.reason}`);
  }
  return lines.join('\n');
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
    .command('costs')
    .description('the cost ledger: storage, communication and compute per feature, measured or declared')
    .option('--line <line>', 'only this business line')
    .option('--model <model>', 'the features of this model (id, name or name@version)')
    .option('--measure', 'measure first (engineer): storage from the stored data, compute by timing the runtime')
    .option(
      '--candidates <n>',
      "candidates per request (fan-out of item features; default: the model's, else 100)",
      parseIntOption('--candidates'),
    )
    .option(
      '--on <where>',
      'with --measure: where the forward is timed: auto (a worker with a GPU when one listens, else the api), api, worker, gpu',
    )
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('features costs', costsFlags, raw);
      if (o.on && !o.measure) throw new CliError('features costs: --on needs --measure');
      const api = apiFrom(cmd);
      let ledger: CostLedgerView;
      if (o.measure) {
        if (!o.line && !o.model) throw new CliError('features costs --measure: name --line or --model');
        ledger = await api.post<CostLedgerView>('/features/costs/measure', {
          ...(o.line ? { businessLine: o.line } : {}),
          ...(o.model ? { model: o.model } : {}),
          ...(o.candidates ? { candidatesPerRequest: o.candidates } : {}),
          ...(o.on ? { on: o.on } : {}),
        });
      } else {
        const q = new URLSearchParams();
        if (o.line) q.set('businessLine', o.line);
        if (o.model) q.set('model', o.model);
        if (o.candidates) q.set('candidatesPerRequest', String(o.candidates));
        ledger = await api.get<CostLedgerView>(`/features/costs${q.size ? `?${q}` : ''}`);
      }
      if (o.json) return printJson(ledger);
      process.stdout.write(`${formatCostLedger(ledger)}\n`);
    });
  features
    .command('expr')
    .description('register a feature defined by an expression over a sample set (docs/guide/feature-expressions.md)')
    .requiredOption('--name <name>', 'feature name, e.g. user_cat_ctr_7d')
    .requiredOption('--domain <line>', 'business line that owns it')
    .requiredOption('--samples <set>', 'the sample set it is read over and checked against (name or id)')
    .requiredOption('--expr <text>', `the expression, e.g. 'rate(by: [user_id, category], over: 7d)'`)
    .option('--kind <kind>', 'numeric, categorical or multi_id (default: what the expression gives)')
    .option('--description <text>', 'what it is for')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('features expr', exprFlags, raw);
      const f = await apiFrom(cmd).post<Feature>('/features', {
        name: o.name,
        businessLine: o.domain,
        sampleSet: o.samples,
        expressionText: o.expr,
        ...(o.kind ? { kind: o.kind } : {}),
        ...(o.description ? { description: o.description } : {}),
      });
      if (o.json) return printJson(f);
      const l = f.expression!.lineage;
      const history = l.historySeconds === null ? 'all earlier rows' : l.historySeconds ? `${l.historySeconds / 3600} h of earlier rows` : 'the row only';
      process.stdout.write(
        `registered ${f.kind} feature ${f.businessLine}/${f.name} = ${f.expression!.text}\n` +
          `  reads ${l.columns.join(', ') || 'no columns'}${l.refs.length ? `, features ${l.refs.join(', ')}` : ''}; ${history}\n` +
          (l.tables?.length ? `  joined as of each impression: ${l.tables.map((t) => `${t.feature} from table ${t.table}`).join(', ')}\n` : ''),
      );
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
          page.items.map((f) => [f.businessLine, f.name, f.kind, f.sourceTable, f.entityKey, f.expression?.text ?? null]),
          ['line', 'name', 'kind', 'table', 'key', 'expression'],
        )}\n`,
      );
    });
};
