import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '@abacus/configs';
import { ApiClient } from './api-client';

/** The API client for a command, from --api / --user / --lines on the root program or the config. */
export function apiFrom(cmd: Command): ApiClient {
  const root = cmd.optsWithGlobals<{ api?: string; user?: string; lines?: string }>();
  const base = root.api ?? loadConfig().ABACUS_API_URL;
  const headers: Record<string, string> = {};
  if (root.user) headers['x-abacus-user'] = root.user;
  if (root.lines) headers['x-abacus-lines'] = root.lines;
  return new ApiClient(base, headers);
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
