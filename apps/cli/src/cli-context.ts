import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '@abacus/configs';
import { ApiClient } from './api-client';
import { CliError } from './commands/command.types';
import { readStoredKey } from './credentials';

/** What to do without a key, said wherever the CLI needs one. */
export const HOW_TO_GET_A_KEY =
  'run `abacus login --key <key>` with a key from an admin (`abacus keys create`), or set ABACUS_API_KEY; ' +
  'on a fresh install `abacus keys bootstrap` creates the first admin key';

/** The API URL of a command: --api on the root program, else ABACUS_API_URL. */
export function apiUrlFrom(cmd: Command): string {
  return cmd.optsWithGlobals<{ api?: string }>().api ?? loadConfig().ABACUS_API_URL;
}

/** The API client for a command: ABACUS_API_KEY wins, else the key `abacus login` stored for this API URL. */
export function apiFrom(cmd: Command): ApiClient {
  const config = loadConfig();
  const base = apiUrlFrom(cmd);
  const key = config.ABACUS_API_KEY ?? readStoredKey(config, base);
  if (!key) throw new CliError(`no API key for ${base}: ${HOW_TO_GET_A_KEY}`);
  return new ApiClient(base, { authorization: `Bearer ${key}` });
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Left-aligned text table. */
export function table(rows: (string | number | null | undefined)[][], header: string[]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? '' : String(c))))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (c ?? '').padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function parseIntOption(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isInteger(n)) throw new InvalidArgumentError(`${name} must be an integer, got "${v}"`);
    return n;
  };
}
