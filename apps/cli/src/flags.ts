import type { z } from 'zod';
import { CliError } from './commands/command.types';

/** `minBinShare` → `--min-bin-share`: the flag as the user typed it. */
export function flagName(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/**
 * Command-line options through a zod schema: the parsed values, or a CliError (exit 1) naming each
 * bad flag and the reason, e.g. `invalid samples import options: --name: letters, digits, ...`.
 * `args` names positional arguments, so their issues read `<id>: must be a UUID`.
 */
export function parseFlags<S extends z.ZodType>(command: string, schema: S, raw: unknown, args: string[] = []): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => {
    const key = String(i.path[0] ?? '');
    const name = args.includes(key) ? `<${key}>` : key ? flagName(key) : '(options)';
    const rest = i.path.slice(1).map(String).join('.');
    return `${name}${rest ? `.${rest}` : ''}: ${i.message}`;
  });
  throw new CliError(`invalid ${command} options: ${issues.join('; ')}`);
}
