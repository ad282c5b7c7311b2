import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { AppConfig } from '@abacus/configs';
import { CliError } from './commands/command.types';

const credentialsSchema = z.object({
  version: z.literal(1),
  /** API URL (normalised) → the key `abacus login` stored for it */
  keys: z.record(z.string(), z.object({ key: z.string().min(1), savedAt: z.string() })),
});
type Credentials = z.output<typeof credentialsSchema>;

type Paths = Pick<AppConfig, 'ABACUS_CREDENTIALS_FILE' | 'XDG_CONFIG_HOME'>;

/** ABACUS_CREDENTIALS_FILE, else $XDG_CONFIG_HOME/abacus/credentials.json, else ~/.config/abacus/credentials.json */
export function credentialsPath(config: Paths): string {
  return (
    config.ABACUS_CREDENTIALS_FILE ??
    path.join(config.XDG_CONFIG_HOME ?? path.join(os.homedir(), '.config'), 'abacus', 'credentials.json')
  );
}

/** One spelling per API: scheme, host, port and path without a trailing slash. */
export function normaliseApiUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    throw new CliError(`not a URL: ${url}`);
  }
}

function read(file: string): Credentials {
  if (!fs.existsSync(file)) return { version: 1, keys: {} };
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CliError(`${file} is not valid JSON (${(err as Error).message}); remove it and run \`abacus login\` again`);
  }
  const parsed = credentialsSchema.safeParse(raw);
  if (!parsed.success) throw new CliError(`${file} is not an Abacus credentials file; remove it and run \`abacus login\` again`);
  return parsed.data;
}

export function readStoredKey(config: Paths, apiUrl: string): string | undefined {
  return read(credentialsPath(config)).keys[normaliseApiUrl(apiUrl)]?.key;
}

/** Stores the key for this API, readable by the user only (directory 0700, file 0600, written atomically). */
export function storeKey(config: Paths, apiUrl: string, key: string): string {
  const file = credentialsPath(config);
  const creds = read(file);
  creds.keys[normaliseApiUrl(apiUrl)] = { key, savedAt: new Date().toISOString() };
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
  fs.chmodSync(file, 0o600);
  return file;
}
