import path from 'node:path';
import type { Command } from 'commander';
import { z } from 'zod';
import { lineName } from '@abacus/catalog';
import { apiFrom, printJson, table } from '../cli-context';
import { parseFlags } from '../flags';
import type { RegisterCommand } from './command.types';

export interface EmbeddingEntry {
  id: string;
  ref: string;
  name: string;
  version: number;
  businessLine: string;
  owner: string;
  dim: number;
  slots: { name: string; rows: number; idSpace: string }[];
  sources: { businessLine: string; name: string; dataVersion: string | null; role: string; rows: number }[];
  sharingPolicy: { shareWith: string[]; updatableBy?: string[] };
  bytes: number;
  sha256: string;
  experimentId: string | null;
  provenance: Record<string, unknown>;
  createdAt: string;
  /** show only: the lines whose models start from this version */
  usedBy?: { businessLine: string; experiments: number }[];
}

const listFlags = z.object({
  line: lineName.optional(),
  name: z.string().min(1).max(200).optional(),
  json: z.boolean().optional(),
});
const refFlags = z.object({ ref: z.string().min(1).max(220), json: z.boolean().optional() });
const exportFlags = z.object({ ref: z.string().min(1).max(220), out: z.string().min(1).optional() });
const lineList = z
  .string()
  .regex(/^(\*|[a-z][a-z0-9_-]*)(,(\*|[a-z][a-z0-9_-]*))*$|^$/, "comma-separated business lines, '*' for all, or empty for none")
  .transform((x) => (x ? x.split(',') : []));
const policyFlags = z
  .object({
    name: z.string().min(1).max(200),
    updatableBy: lineList.optional(),
    shareWith: lineList.optional(),
    json: z.boolean().optional(),
  })
  .refine((o) => o.updatableBy !== undefined || o.shareWith !== undefined, {
    message: 'give --updatable-by, --share-with or both',
  });

const shared = (e: EmbeddingEntry) => (e.sharingPolicy.shareWith.length ? e.sharingPolicy.shareWith.join(',') : 'private');

const num4 = (x: unknown) => (typeof x === 'number' ? `${x >= 0 ? '+' : ''}${x.toFixed(4)}` : '?');
const interval = (x: { delta?: number; ciLow?: number; ciHigh?: number } | undefined) =>
  x ? `${num4(x.delta)} [${num4(x.ciLow)}, ${num4(x.ciHigh)}]` : '?';

/** The lines of `embeddings show` about where a version came from and what it did. */
function lineage(e: EmbeddingEntry): string[] {
  const p = e.provenance as {
    parent?: string;
    updatedBy?: string;
    updateResult?: {
      line: string;
      validation: { delta: number; ciLow: number; ciHigh: number };
      test: { delta: number };
      verdict: string;
    };
    ownerCheck?: { line: string; parent: string; delta: number; ciLow: number; ciHigh: number; verdict: string };
  };
  return [
    ...(p.parent ? [`  parent: ${p.parent}, trained by line ${p.updatedBy ?? '?'}`] : []),
    ...(p.updateResult
      ? [
          `  for ${p.updateResult.line}: validation ΔAUC ${interval(p.updateResult.validation)} over its model without it (${p.updateResult.verdict}); test ΔAUC ${num4(p.updateResult.test.delta)}`,
        ]
      : []),
    ...(p.ownerCheck
      ? [
          `  owner check on ${p.ownerCheck.line}: validation ΔAUC ${interval(p.ownerCheck)} over ${p.ownerCheck.parent}: ${p.ownerCheck.verdict}`,
        ]
      : []),
    ...(e.usedBy
      ? [`  used by: ${e.usedBy.map((u) => `${u.businessLine} (${u.experiments})`).join(', ') || 'no line yet'}`]
      : []),
  ];
}

/** The text of `embeddings show`. */
export function renderEmbedding(e: EmbeddingEntry): string {
  return [
    `${e.ref}  (${e.id})`,
    `  line: ${e.businessLine}, owner: ${e.owner}, shared with: ${shared(e)}, updatable by: ${
      e.sharingPolicy.updatableBy?.length ? e.sharingPolicy.updatableBy.join(',') : 'the owner line only'
    }`,
    ...lineage(e),
    `  dim: ${e.dim}, ${e.bytes} bytes, sha256 ${e.sha256}`,
    `  experiment: ${e.experimentId ?? '(none)'}`,
    `  learned by: ${Object.entries(e.provenance)
      .map(([k, v]) => `${k}=${typeof v === 'number' ? Math.round(v * 1e4) / 1e4 : String(v)}`)
      .join(', ')}`,
    `  created: ${e.createdAt}`,
    '',
    table(
      e.sources.map((s) => [s.role, `${s.businessLine}/${s.name}`, s.dataVersion ?? '', s.rows]),
      ['role', 'sample set', 'data version', 'rows used'],
    ),
    '',
    table(
      e.slots.map((s) => [s.name, s.rows, s.idSpace]),
      ['slot', 'rows', 'ids'],
    ),
  ].join('\n');
}

export const registerEmbeddings: RegisterCommand = (program) => {
  const emb = program
    .command('embeddings')
    .description('shared embeddings (name@version) learned by multiply experiments; start models from them with "init"');

  emb
    .command('list')
    .description('shared embeddings you may read (your lines and those shared with them), newest version first')
    .option('--line <line>', 'only this business line')
    .option('--name <name>', 'only versions of this name')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('embeddings list', listFlags, raw);
      const q = new URLSearchParams({ pageSize: '500' });
      if (o.line) q.set('businessLine', o.line);
      if (o.name) q.set('name', o.name);
      const page = await apiFrom(cmd).get<{ items: EmbeddingEntry[]; total: number }>(`/embeddings?${q.toString()}`);
      if (o.json) return printJson(page);
      process.stdout.write(
        `${table(
          page.items.map((e) => [
            e.ref,
            e.businessLine,
            e.dim,
            e.slots.map((s) => s.name).join(','),
            e.sources.map((s) => `${s.businessLine}/${s.name}`).join(' + '),
            shared(e),
            e.createdAt,
          ]),
          ['embedding', 'line', 'dim', 'slots', 'learned on', 'shared with', 'created'],
        )}\n`,
      );
    });

  emb
    .command('show')
    .description('one shared embedding: slots, the sample sets and data versions it came from, sharing')
    .argument('<ref>', 'name@version, name (latest version) or id')
    .option('--json', 'print JSON')
    .action(async (ref: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('embeddings show', refFlags, { ...raw, ref }, ['ref']);
      const e = await apiFrom(cmd).get<EmbeddingEntry>(`/embeddings/${encodeURIComponent(o.ref)}`);
      if (o.json) return printJson(e);
      process.stdout.write(`${renderEmbedding(e)}\n`);
    });

  emb
    .command('policy')
    .description(
      'who may start models from a name (--share-with) and who may publish new versions of it (--updatable-by); the owner line sets it for every version',
    )
    .argument('<name>', 'the embedding name')
    .option('--updatable-by <lines>', "lines that may update it, comma-separated ('*': every line; empty: the owner line only)")
    .option('--share-with <lines>', "lines whose models may start from it ('*': every line; empty: none)")
    .option('--json', 'print JSON')
    .action(async (name: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('embeddings policy', policyFlags, { ...raw, name }, ['name']);
      const e = await apiFrom(cmd).patch<EmbeddingEntry>(`/embeddings/${encodeURIComponent(o.name)}/policy`, {
        ...(o.updatableBy !== undefined ? { updatableBy: o.updatableBy } : {}),
        ...(o.shareWith !== undefined ? { shareWith: o.shareWith } : {}),
      });
      if (o.json) return printJson(e);
      process.stdout.write(
        `${e.name}: shared with ${shared(e)}; updatable by ${e.sharingPolicy.updatableBy?.length ? e.sharingPolicy.updatableBy.join(',') : 'the owner line only'}\n`,
      );
    });

  emb
    .command('export')
    .description('download the tables as safetensors (embedding.<slot> [rows, dim], wide.<slot>; id spaces in the metadata)')
    .argument('<ref>', 'name@version, name (latest version) or id')
    .option('-o, --out <file>', 'where to write it (default: ./<name>@<version>.safetensors)')
    .action(async (ref: string, raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('embeddings export', exportFlags, { ...raw, ref }, ['ref']);
      const api = apiFrom(cmd);
      const e = await api.get<EmbeddingEntry>(`/embeddings/${encodeURIComponent(o.ref)}`);
      const out = path.resolve(o.out ?? `${e.name}@${e.version}.safetensors`);
      const bytes = await api.download(`/embeddings/${encodeURIComponent(e.id)}/safetensors`, out);
      process.stdout.write(`${e.ref}: ${bytes} bytes written to ${out}\n`);
    });
};
