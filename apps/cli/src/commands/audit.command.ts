import type { Command } from 'commander';
import { z } from 'zod';
import { auditQuerySchema } from '@abacus/access';
import { apiFrom, printJson, table } from '../cli-context';
import type { RegisterCommand } from './command.types';
import { parseFlags } from './keys.command';

interface AuditEntry {
  at: string;
  actorName: string;
  actorRole: string;
  action: string;
  businessLine: string | null;
  targetType: string;
  targetId: string;
  details: Record<string, unknown>;
}

const auditFlags = auditQuerySchema.extend({ json: z.boolean().optional() });

export const registerAudit: RegisterCommand = (program) => {
  const audit = program.command('audit').description('the audit log: who did what (admin)');
  audit
    .command('list')
    .description('audit entries, newest first')
    .option('--action <action>', 'e.g. experiment.submitted, key.created')
    .option('--line <line>', 'business line')
    .option('--actor <actor>', 'key name or key id')
    .option('--since <time>', 'ISO time, e.g. 2026-11-01T00:00:00Z')
    .option('--page <n>', 'page number', '1')
    .option('--page-size <n>', 'page size', '50')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const { line, ...rest } = raw as { line?: string };
      const f = parseFlags(auditFlags, { ...rest, businessLine: line });
      const q = new URLSearchParams({ page: String(f.page), pageSize: String(f.pageSize) });
      if (f.action) q.set('action', f.action);
      if (f.businessLine) q.set('businessLine', f.businessLine);
      if (f.actor) q.set('actor', f.actor);
      if (f.since) q.set('since', f.since.toISOString());
      const page = await apiFrom(cmd).get<{ items: AuditEntry[]; total: number; page: number }>(`/audit?${q}`);
      if (f.json) return printJson(page);
      process.stdout.write(
        `${table(
          page.items.map((e) => [
            e.at,
            e.actorName,
            e.actorRole,
            e.action,
            e.businessLine ?? '',
            `${e.targetType} ${e.targetId}`,
          ]),
          ['at', 'actor', 'role', 'action', 'line', 'target'],
        )}\n${page.total} entr${page.total === 1 ? 'y' : 'ies'}, page ${page.page}\n`,
      );
    });
};
