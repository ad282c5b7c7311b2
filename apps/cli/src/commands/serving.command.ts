import fs from 'node:fs';
import type { Command } from 'commander';
import { z } from 'zod';
import { lineName } from '@abacus/catalog';
import { LARGE_TIER, tierAlias } from '@abacus/core';
import { apiFrom, printJson, table } from '../cli-context';
import { parseFlags } from '../flags';
import { CliError, type RegisterCommand } from './command.types';

const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a UUID');
const num = z.coerce.number().finite();

const registerFlags = z.object({
  model: z.string().min(1).max(200),
  line: lineName,
  tiers: z
    .string()
    .regex(
      /^(large|-1|\d+)(,(large|-1|\d+))*$/,
      'comma-separated tiers, e.g. 0,1,2 or large,0,1 (large = -1, above the full model)',
    )
    .transform((s) => s.split(',').map((t) => (t === 'large' ? LARGE_TIER : Number(t)))),
  webhookUrl: z
    .string()
    .url()
    .refine((u) => /^https?:/.test(u), 'must be an http or https URL'),
  /** a file holding the secret (kept out of shell history and ps) */
  secretFile: z.string().min(1),
  policy: z.string().min(1).optional(),
  json: z.boolean().optional(),
});
const signalFlags = z.object({
  id: uuid,
  at: z.iso.datetime({ offset: true }).optional(),
  cpu: num.min(0).max(1).optional(),
  gpu: num.min(0).max(1).optional(),
  p99LatencyMs: num.min(0).optional(),
  errorRate: num.min(0).max(1).optional(),
  qps: num.min(0).optional(),
  json: z.boolean().optional(),
});
const idFlags = z.object({ id: uuid, json: z.boolean().optional() });
const pinFlags = z.object({
  id: uuid,
  tier: z.union([z.literal('large').transform(() => LARGE_TIER), z.coerce.number().int().min(LARGE_TIER)]),
  reason: z.string().trim().min(1).max(1000),
});

interface Served {
  id: string;
  businessLine: string;
  modelName: string;
  tiers: number[];
  activeTier: number;
  pinnedTier: number | null;
  webhookUrl: string;
}
interface Active {
  tier: number;
  modelId: string;
  version: number;
  features: string[];
  artifacts: { safetensors: string; onnx: string };
  since: string;
  pinned: { tier: number; reason: string | null; by: string | null } | null;
}
interface SwitchRow {
  at: string;
  fromTier: number | null;
  toTier: number;
  manual: boolean;
  actor: string;
  reason: string;
  deliveries: { status: string; attempts: number; lastError: string | null }[];
}

const renderServed = (s: Served) =>
  `${s.id}  ${s.businessLine}/${s.modelName}  tiers ${s.tiers.map(tierAlias).join(',')}  active ${tierAlias(s.activeTier)}${
    s.pinnedTier !== null ? ` (pinned to ${tierAlias(s.pinnedTier)})` : ''
  }  webhook ${s.webhookUrl}`;

export const registerServing: RegisterCommand = (program) => {
  const serving = program
    .command('serving')
    .description("serve a model's tiers (divide's tier-0, tier-1, ...): switching policy, signals, pins, switch log");

  serving
    .command('register')
    .description('register a served model: its tiers, webhook and switching policy')
    .requiredOption('--model <name|id>', 'the registered model (its name, or the id of a version)')
    .requiredOption('--line <line>', 'business line')
    .requiredOption(
      '--tiers <list>',
      'tiers it may use, e.g. 0,1,2 or large,0,1 (large: above the full model, for its schedule windows)',
    )
    .requiredOption('--webhook-url <url>', 'where switches are POSTed (signed)')
    .requiredOption('--secret-file <file>', 'file holding the webhook secret (16+ characters; surrounding whitespace dropped)')
    .option(
      '--policy <file>',
      'policy JSON (see configs/examples/serving-policy.json; with a schedule: serving-policy-offpeak.json)',
    )
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('serving register', registerFlags, raw);
      let secret: string;
      try {
        secret = fs.readFileSync(o.secretFile, 'utf8').trim();
      } catch (err) {
        throw new CliError(`--secret-file: cannot read ${o.secretFile}: ${(err as Error).message}`);
      }
      let policy: unknown;
      if (o.policy) {
        try {
          policy = JSON.parse(fs.readFileSync(o.policy, 'utf8'));
        } catch (err) {
          throw new CliError(`--policy: cannot read ${o.policy} as JSON: ${(err as Error).message}`);
        }
      }
      const s = await apiFrom(cmd).post<Served>('/serving', {
        model: o.model,
        businessLine: o.line,
        tiers: o.tiers,
        webhookUrl: o.webhookUrl,
        secret,
        ...(policy === undefined ? {} : { policy }),
      });
      if (o.json) return printJson(s);
      process.stdout.write(`${renderServed(s)}\n`);
    });

  serving
    .command('list')
    .description('served models you may read')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('serving list', z.object({ json: z.boolean().optional() }), raw);
      const items = await apiFrom(cmd).get<Served[]>('/serving');
      if (o.json) return printJson(items);
      process.stdout.write(`${items.map(renderServed).join('\n')}\n`);
    });

  serving
    .command('signal')
    .description('report load signals; the policy may switch the tier')
    .argument('<id>', 'served model id')
    .option('--at <time>', 'ISO time of the measurement (default: now)')
    .option('--cpu <fraction>', 'CPU utilisation 0..1')
    .option('--gpu <fraction>', 'GPU utilisation 0..1')
    .option('--p99-latency-ms <ms>', 'p99 latency in ms')
    .option('--error-rate <fraction>', 'error rate 0..1')
    .option('--qps <n>', 'queries per second')
    .option('--json', 'print JSON')
    .action(async (id: string, raw: Record<string, unknown>, cmd: Command) => {
      const { id: sid, json, ...body } = parseFlags('serving signal', signalFlags, { ...raw, id }, ['id']);
      const r = await apiFrom(cmd).post<{ tier: number; decision: { action: string; reason: string } }>(
        `/serving/${sid}/signals`,
        body,
      );
      if (json) return printJson(r);
      process.stdout.write(`${r.decision.action}: ${tierAlias(r.tier)} (${r.decision.reason})\n`);
    });

  serving
    .command('active')
    .description('the active tier: model version, features, artifact links, pin')
    .argument('<id>', 'served model id')
    .option('--json', 'print JSON')
    .action(async (id: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('serving active', idFlags, { ...raw, id }, ['id']);
      const a = await apiFrom(cmd).get<Active>(`/serving/${o.id}/active`);
      if (o.json) return printJson(a);
      process.stdout.write(
        [
          `${tierAlias(a.tier)} since ${a.since}${a.pinned ? ` (pinned by ${a.pinned.by}: ${a.pinned.reason})` : ''}`,
          `  model ${a.modelId} v${a.version}, ${a.features.length} features: ${a.features.join(', ')}`,
          `  safetensors: ${a.artifacts.safetensors}`,
          `  onnx: ${a.artifacts.onnx}`,
        ].join('\n') + '\n',
      );
    });

  serving
    .command('log')
    .description('the switch log, oldest first, with webhook outcomes')
    .argument('<id>', 'served model id')
    .option('--json', 'print JSON')
    .action(async (id: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('serving log', idFlags, { ...raw, id }, ['id']);
      const rows = await apiFrom(cmd).get<SwitchRow[]>(`/serving/${o.id}/log`);
      if (o.json) return printJson(rows);
      process.stdout.write(
        `${table(
          rows.map((r) => [
            r.at,
            `${r.fromTier === null ? '-' : tierAlias(r.fromTier)} -> ${tierAlias(r.toTier)}`,
            r.manual ? `manual (${r.actor})` : 'policy',
            r.reason,
            r.deliveries.map((d) => `${d.status} after ${d.attempts}${d.lastError ? `: ${d.lastError}` : ''}`).join('; '),
          ]),
          ['at', 'switch', 'by', 'reason', 'webhook'],
        )}\n`,
      );
    });

  serving
    .command('pin')
    .description('hold a tier regardless of the policy until unpinned')
    .argument('<id>', 'served model id')
    .requiredOption('--tier <n>', 'the tier to hold (a number, or large)')
    .requiredOption('--reason <text>', 'why (recorded in the switch log)')
    .action(async (id: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('serving pin', pinFlags, { ...raw, id }, ['id']);
      const s = await apiFrom(cmd).post<Served>(`/serving/${o.id}/pin`, { tier: o.tier, reason: o.reason });
      process.stdout.write(`${renderServed(s)}\n`);
    });

  serving
    .command('unpin')
    .description('hand the tier back to the policy')
    .argument('<id>', 'served model id')
    .action(async (id: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('serving unpin', idFlags, { ...raw, id }, ['id']);
      const s = await apiFrom(cmd).request<Served>('DELETE', `/serving/${o.id}/pin`);
      process.stdout.write(`${renderServed(s)}\n`);
    });
};
