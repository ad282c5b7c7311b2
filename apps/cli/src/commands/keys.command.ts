import type { Command } from 'commander';
import { z } from 'zod';
import { ApiKeyService, keyLinesSchema, keyNameSchema } from '@abacus/access';
import { loadConfig } from '@abacus/configs';
import { ROLES, SYSTEM_SCOPE } from '@abacus/core';
import { createDataSource } from '@abacus/data';
import { apiFrom, apiUrlFrom, printJson, table } from '../cli-context';
import { credentialsPath, readStoredKey, storeKey } from '../credentials';
import { CliError, type RegisterCommand } from './command.types';

interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  role: string;
  lines: string[];
  createdBy: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

const commaList = z.string().transform((s) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean),
);

const createFlags = z
  .object({
    name: keyNameSchema,
    role: z.enum(ROLES),
    lines: commaList.pipe(keyLinesSchema),
    expiresInDays: z.coerce.number().int().min(1).max(3650).optional(),
    expiresAt: z.iso.datetime({ offset: true }).optional(),
    json: z.boolean().optional(),
  })
  .refine((f) => f.expiresAt === undefined || f.expiresInDays === undefined, {
    message: 'give --expires-at or --expires-in-days, not both',
    path: ['expiresInDays'],
  });

const bootstrapFlags = z.object({
  name: keyNameSchema.default('local-admin'),
  force: z.boolean().optional(),
  json: z.boolean().optional(),
});

const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** Parses a command's flags with its zod schema; a bad flag is named with the reason. */
export function parseFlags<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const f = schema.safeParse(raw);
  if (!f.success) {
    throw new CliError(
      `invalid options: ${f.error.issues.map((i) => `--${kebab(i.path.map(String).join('.'))}: ${i.message}`).join('; ')}`,
    );
  }
  return f.data;
}

function status(k: ApiKey): string {
  if (k.revokedAt) return `revoked ${k.revokedAt}`;
  if (k.expiresAt && Date.parse(k.expiresAt) <= Date.now()) return `expired ${k.expiresAt}`;
  return k.expiresAt ? `active until ${k.expiresAt}` : 'active';
}

export const registerKeys: RegisterCommand = (program) => {
  const keys = program.command('keys').description('API keys: create, list, revoke (admin), who am I, bootstrap the first one');

  keys
    .command('create')
    .description('create an API key (admin); its secret is printed once')
    .requiredOption('--name <name>', 'who or what the key is for, e.g. alice or ci-feed')
    .requiredOption('--role <role>', `${ROLES.join(' | ')}`)
    .requiredOption('--lines <lines>', "comma-separated business lines, or '*' for all")
    .option('--expires-in-days <n>', 'expire after this many days')
    .option('--expires-at <time>', 'expire at this ISO time, e.g. 2027-01-31T00:00:00Z')
    .option('--json', 'print JSON (including the secret)')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const f = parseFlags(createFlags, raw);
      const k = await apiFrom(cmd).post<ApiKey & { secret: string }>('/keys', {
        name: f.name,
        role: f.role,
        lines: f.lines,
        ...(f.expiresInDays ? { expiresInDays: f.expiresInDays } : {}),
        ...(f.expiresAt ? { expiresAt: f.expiresAt } : {}),
      });
      if (f.json) return printJson(k);
      process.stdout.write(
        `created API key ${k.prefix}… for ${k.name} (${k.role}; lines: ${k.lines.join(', ')}; ${status(k)})\n` +
          `  id:     ${k.id}\n  secret: ${k.secret}\n` +
          `This is the only time the secret is shown. Its holder runs: abacus login --key <secret>\n`,
      );
    });

  keys
    .command('list')
    .description('list API keys (admin); secrets are never shown')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const f = parseFlags(z.object({ json: z.boolean().optional() }), raw);
      const ks = await apiFrom(cmd).get<ApiKey[]>('/keys');
      if (f.json) return printJson(ks);
      process.stdout.write(
        `${table(
          ks.map((k) => [k.id, `${k.prefix}…`, k.name, k.role, k.lines.join(','), status(k), k.lastUsedAt ?? 'never']),
          ['id', 'prefix', 'name', 'role', 'lines', 'status', 'last used'],
        )}\n`,
      );
    });

  keys
    .command('revoke')
    .description('revoke an API key (admin): it is refused with 401 from now on')
    .argument('<id>', 'key id (from `abacus keys list`)')
    .option('--json', 'print JSON')
    .action(async (id: string, raw: Record<string, unknown>, cmd: Command) => {
      const f = parseFlags(z.object({ id: z.uuid('a key id (uuid)'), json: z.boolean().optional() }), { ...raw, id });
      const k = await apiFrom(cmd).post<ApiKey>(`/keys/${f.id}/revoke`);
      if (f.json) return printJson(k);
      process.stdout.write(`revoked API key ${k.prefix}… (${k.name})\n`);
    });

  keys
    .command('whoami')
    .description('the key this CLI uses: name, role, business lines, expiry')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const f = parseFlags(z.object({ json: z.boolean().optional() }), raw);
      const k = await apiFrom(cmd).get<ApiKey>('/keys/me');
      if (f.json) return printJson(k);
      process.stdout.write(`${k.name} (${k.role}; lines: ${k.lines.join(', ')}; key ${k.prefix}…; ${status(k)})\n`);
    });

  keys
    .command('bootstrap')
    .description(
      'create an admin key (all lines) directly in the database, no running API needed, and store it for this API URL; ' +
        'does nothing when a working key is already stored (use --force for another)',
    )
    .option('--name <name>', 'name of the key', 'local-admin')
    .option('--force', 'create a new key even if a working one is stored')
    .option('--json', 'print JSON (including the secret)')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const f = parseFlags(bootstrapFlags, raw);
      const config = loadConfig();
      const apiUrl = apiUrlFrom(cmd);
      const ds = createDataSource(config);
      try {
        await ds.initialize();
      } catch (err) {
        throw new CliError(`cannot reach the database (ABACUS_DATABASE_URL): ${(err as Error).message}`);
      }
      try {
        if (await ds.showMigrations()) throw new CliError('the database has pending migrations: run `npm run migrate` first');
        const keys = new ApiKeyService(ds);
        const stored = readStoredKey(config, apiUrl);
        if (stored && !f.force && (await keys.isLive(stored))) {
          const { scope } = await keys.authenticate(stored);
          if (f.json)
            return printJson({ created: false, name: scope.user, role: scope.role, credentials: credentialsPath(config) });
          process.stdout.write(
            `a working key for ${apiUrl} is already stored in ${credentialsPath(config)} (${scope.user}, ${scope.role})\n`,
          );
          return;
        }
        const { key, secret } = await keys.create({ name: f.name, role: 'admin', lines: ['*'] }, SYSTEM_SCOPE);
        const file = storeKey(config, apiUrl, secret);
        if (f.json) return printJson({ created: true, ...key, secret, credentials: file });
        process.stdout.write(
          `created admin key ${key.prefix}… (${key.name}, all business lines)\n  secret: ${secret}\n` +
            `stored for ${apiUrl} in ${file}; the CLI uses it from now on. Keep the secret safe: it is not shown again.\n`,
        );
      } finally {
        await ds.destroy();
      }
    });
};
