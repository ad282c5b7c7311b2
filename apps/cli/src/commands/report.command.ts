import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { z } from 'zod';
import { lineName } from '@abacus/catalog';
import { apiFrom, printJson, table } from '../cli-context';
import { parseFlags } from '../flags';
import type { RegisterCommand } from './command.types';

interface ReportSummary {
  features: number;
  removable: number;
  newlyRemovable: number;
  noLongerRemovable: number;
  ivDrift: number;
  psiDrift: number;
  featuresAdded: number;
}

export interface ReportEntry {
  id: string;
  businessLine: string;
  modelName: string;
  trigger: string;
  fireAt: string;
  status: string;
  experimentId: string;
  /** the report this one is compared with; null for a model's first report */
  previousReportId?: string | null;
  summary: ReportSummary | null;
  error: string | null;
  content?: {
    model: { name: string; version: number };
    sampleSet: { name: string; rows: number; dataVersion: string | null };
    maxDrop: number;
    features: { feature: string; removable: boolean; iv: number | null; shuffleDrop: number | null; psi: number | null }[];
    removable: string[];
    changes: {
      previousReportId: string | null;
      newlyRemovable: string[];
      noLongerRemovable: string[];
      ivDrift: { feature: string; change: number }[];
      psiDrift: string[];
      featuresAdded: { name: string }[];
    };
    savings: { resources: { resource: string; unit: string; saved: number; share: number | null }[] };
  } | null;
  deliveries?: { channel: string; target: string; status: string; attempts: number; lastError: string | null }[];
}

interface ScheduleEntry {
  id: string;
  businessLine: string;
  modelName: string;
  cron: string;
  timezone: string;
  emails: string[];
  nextRunAt: string | null;
}

const num = (v: number | null | undefined, d = 4) => (v === null || v === undefined ? '—' : v.toFixed(d));

/** One-line summary of the changes since the previous report, or that there was none to compare with. */
export function changesLine(s: ReportSummary | null, previousReportId: string | null | undefined = undefined): string {
  if (!s) return '';
  if (previousReportId === null) return 'first report';
  const parts = [
    s.newlyRemovable && `+${s.newlyRemovable} removable`,
    s.noLongerRemovable && `−${s.noLongerRemovable} removable`,
    s.ivDrift && `${s.ivDrift} IV drift`,
    s.psiDrift && `${s.psiDrift} PSI drift`,
    s.featuresAdded && `${s.featuresAdded} new feature(s)`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'no change';
}

/** The text of `report show`. */
export function renderReport(r: ReportEntry): string {
  const head = [
    `report ${r.id}  ${r.businessLine}/${r.modelName}  ${r.status}  (${r.trigger}, ${r.fireAt})`,
    `  experiment: ${r.experimentId}`,
  ];
  if (r.error) head.push(`  error: ${r.error}`);
  const c = r.content;
  if (!c) return head.join('\n');
  const ch = c.changes;
  return [
    ...head,
    `  model v${c.model.version} on sample set ${c.sampleSet.name} (${c.sampleSet.rows} rows, ${c.sampleSet.dataVersion ?? 'no data version'})`,
    `  removable: ${c.removable.length} of ${c.features.length} (maxDrop ${c.maxDrop}): ${c.removable.join(', ') || 'none'}`,
    ch.previousReportId
      ? [
          `  since report ${ch.previousReportId}:`,
          `    newly removable: ${ch.newlyRemovable.join(', ') || 'none'}`,
          `    no longer removable: ${ch.noLongerRemovable.join(', ') || 'none'}`,
          `    IV drift: ${ch.ivDrift.map((d) => `${d.feature} (${d.change >= 0 ? '+' : ''}${num(d.change)})`).join(', ') || 'none'}`,
          `    PSI drift: ${ch.psiDrift.join(', ') || 'none'}`,
          `    features added: ${ch.featuresAdded.map((f) => f.name).join(', ') || 'none'}`,
        ].join('\n')
      : '  first report of this model',
    `  savings: ${c.savings.resources.map((s) => `${s.resource} ${num(s.saved, 2)} ${s.unit} (${s.share === null ? '—' : `${(s.share * 100).toFixed(1)}%`})`).join('; ')}`,
    '',
    table(
      c.features.map((f) => [f.feature, f.removable ? 'yes' : '', num(f.iv), num(f.shuffleDrop, 5), num(f.psi)]),
      ['feature', 'removable', 'iv', 'shuffle drop', 'psi'],
    ),
    ...(r.deliveries?.length
      ? [
          '',
          table(
            r.deliveries.map((d) => [d.channel, d.target, d.status, d.attempts, d.lastError ?? '']),
            ['delivery', 'to', 'status', 'attempts', 'error'],
          ),
        ]
      : []),
  ].join('\n');
}

const listFlags = z.object({
  line: lineName.optional(),
  model: z.string().min(1).max(200).optional(),
  json: z.boolean().optional(),
});
const showFlags = z.object({
  id: z.string().uuid('a report id (UUID)'),
  json: z.boolean().optional(),
  html: z.string().min(1).optional(),
});
const runFlags = z.object({ model: z.string().min(1).max(200), line: lineName, json: z.boolean().optional() });
const emails = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.string().email()));
const scheduleFlags = z.object({
  model: z.string().min(1).max(200),
  line: lineName,
  cron: z.string().min(1).optional(),
  tz: z.string().min(1).optional(),
  email: emails.optional(),
  json: z.boolean().optional(),
});
const idFlags = z.object({ id: z.string().uuid('a schedule id (UUID)') });

export const registerReport: RegisterCommand = (program) => {
  const report = program.command('report').description('weekly auto-pruning reports: list, show, run now, schedules');

  report
    .command('list')
    .description('reports you may read, newest first')
    .option('--line <line>', 'only this business line')
    .option('--model <name>', 'only this model')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('report list', listFlags, raw);
      const q = new URLSearchParams({ pageSize: '200' });
      if (o.line) q.set('businessLine', o.line);
      if (o.model) q.set('model', o.model);
      const page = await apiFrom(cmd).get<{ items: ReportEntry[]; total: number }>(`/reports?${q.toString()}`);
      if (o.json) return printJson(page);
      process.stdout.write(
        `${table(
          page.items.map((r) => [
            r.id,
            `${r.businessLine}/${r.modelName}`,
            r.fireAt,
            r.status,
            r.summary ? `${r.summary.removable}/${r.summary.features}` : '',
            changesLine(r.summary, r.previousReportId),
          ]),
          ['report', 'model', 'date', 'status', 'removable', 'changes'],
        )}\n`,
      );
    });

  report
    .command('show')
    .description('one report: removable features with their evidence, changes since the previous report, savings')
    .argument('<id>', 'report id')
    .option('--json', 'print JSON')
    .option('--html <file>', 'also write the rendered HTML to this file')
    .action(async (id: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('report show', showFlags, { ...raw, id }, ['id']);
      const api = apiFrom(cmd);
      const r = await api.get<ReportEntry>(`/reports/${o.id}`);
      if (o.html) {
        const html = await api.get<string>(`/reports/${o.id}/html`);
        const out = path.resolve(o.html);
        fs.writeFileSync(`${out}.tmp`, html);
        fs.renameSync(`${out}.tmp`, out);
      }
      if (o.json) return printJson(r);
      process.stdout.write(`${renderReport(r)}\n`);
    });

  report
    .command('run')
    .description("a report of the model now: subtract on the model's latest data, rendered and delivered")
    .requiredOption('--model <name>', 'model name or id')
    .requiredOption('--line <line>', 'business line')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('report run', runFlags, raw);
      const r = await apiFrom(cmd).post<ReportEntry>('/reports/run', { model: o.model, businessLine: o.line });
      if (o.json) return printJson(r);
      process.stdout.write(`report ${r.id} queued (experiment ${r.experimentId}); see: abacus report show ${r.id}\n`);
    });

  const schedule = report.command('schedule').description('the report schedule of a model');
  schedule
    .command('set')
    .description('create or change the schedule (default: weekly, Monday 06:00 in ABACUS_REPORT_TZ)')
    .requiredOption('--model <name>', 'model name or id')
    .requiredOption('--line <line>', 'business line')
    .option('--cron <pattern>', 'cron pattern, e.g. "0 6 * * 1"')
    .option('--tz <zone>', 'IANA time zone, e.g. Europe/Berlin')
    .option('--email <a,b>', 'e-mail addresses of the owners')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('report schedule set', scheduleFlags, raw);
      const api = apiFrom(cmd);
      const existing = await api.get<ScheduleEntry[]>(
        `/report-schedules?${new URLSearchParams({ businessLine: o.line, model: o.model }).toString()}`,
      );
      const body = { cron: o.cron, timezone: o.tz, emails: o.email };
      const s = existing.length
        ? await api.patch<ScheduleEntry>(`/report-schedules/${existing[0].id}`, body)
        : await api.post<ScheduleEntry>('/report-schedules', { model: o.model, businessLine: o.line, ...body });
      if (o.json) return printJson(s);
      process.stdout.write(
        `schedule ${s.id}: ${s.businessLine}/${s.modelName} "${s.cron}" (${s.timezone}), next ${s.nextRunAt ?? '—'}\n`,
      );
    });
  schedule
    .command('list')
    .description('report schedules you may read')
    .option('--line <line>', 'only this business line')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('report schedule list', listFlags, raw);
      const q = new URLSearchParams();
      if (o.line) q.set('businessLine', o.line);
      if (o.model) q.set('model', o.model);
      const list = await apiFrom(cmd).get<ScheduleEntry[]>(`/report-schedules?${q.toString()}`);
      if (o.json) return printJson(list);
      process.stdout.write(
        `${table(
          list.map((s) => [s.id, `${s.businessLine}/${s.modelName}`, s.cron, s.timezone, s.nextRunAt ?? '', s.emails.join(',')]),
          ['schedule', 'model', 'cron', 'time zone', 'next', 'e-mail'],
        )}\n`,
      );
    });
  schedule
    .command('delete')
    .description('delete a schedule (its reports stay)')
    .argument('<id>', 'schedule id')
    .action(async (id: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('report schedule delete', idFlags, { ...raw, id }, ['id']);
      await apiFrom(cmd).request('DELETE', `/report-schedules/${o.id}`);
      process.stdout.write(`schedule ${o.id} deleted\n`);
    });
};
