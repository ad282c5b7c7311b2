import fs from 'node:fs';
import type { Command } from 'commander';
import { z } from 'zod';
import { parseApiKey } from '@abacus/access';
import { loadConfig } from '@abacus/configs';
import { ApiClient } from '../api-client';
import { apiUrlFrom } from '../cli-context';
import { storeKey } from '../credentials';
import type { RegisterCommand } from './command.types';
import { parseFlags } from './keys.command';

const loginFlags = z.object({
  key: z
    .string()
    .refine(
      (k) => k === '-' || parseApiKey(k) !== null,
      'an Abacus API key ("abk_" followed by 43 base64url characters), or - to read it from stdin',
    ),
});

/** `abacus login --key KEY`: checks the key against the API, then stores it for that API URL. */
export const registerLogin: RegisterCommand = (program) => {
  program
    .command('login')
    .description('store an API key for the API URL (--api or ABACUS_API_URL) after checking it works')
    .requiredOption('--key <key>', "the key's secret (abk_...), or - to read it from stdin")
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const f = parseFlags(loginFlags, raw);
      const key = f.key === '-' ? fs.readFileSync(0, 'utf8').trim() : f.key;
      parseFlags(loginFlags, { key });
      const apiUrl = apiUrlFrom(cmd);
      const me = await new ApiClient(apiUrl, { authorization: `Bearer ${key}` }).get<{
        name: string;
        role: string;
        lines: string[];
      }>('/keys/me');
      const file = storeKey(loadConfig(), apiUrl, key);
      process.stdout.write(
        `logged in to ${apiUrl} as ${me.name} (${me.role}; lines: ${me.lines.join(', ')}); key stored in ${file}\n`,
      );
    });
};
