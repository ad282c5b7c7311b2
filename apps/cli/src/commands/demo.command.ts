import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { ApiClient } from '../api-client';
import { apiFrom, printJson } from '../cli-context';
import { z } from 'zod';
import { parseFlags } from '../flags';
import { CliError, type RegisterCommand } from './command.types';

const demoFlags = z.object({ dir: z.string().min(1), json: z.boolean().optional() });

interface GroundTruthLite {
  domains: { name: string; impressions: number; upperBoundTestAuc: number }[];
  features: {
    name: string;
    inConfigOf: string[];
    costs: { storageBytesPerEntity: number; fetchBytesPerRequest: number; computeCost: number };
  }[];
}

async function exists(api: ApiClient, route: string, pick: (items: { name: string }[]) => boolean): Promise<boolean> {
  const page = await api.get<{ items: { name: string }[] } | { name: string }[]>(route);
  return pick(Array.isArray(page) ? page : page.items);
}

/**
 * Registers a simulator world written by `abacus sim`: one business line per domain, the flat sample
 * set of each line (demo-<line>), and the user/item/context feature tables. Skips what is already there.
 */
export const registerDemo: RegisterCommand = (program) => {
  program
    .command('demo')
    .description('register a simulated world (from `abacus sim`) with the API; safe to run again')
    .requiredOption('--dir <dir>', 'the directory `abacus sim --out` wrote')
    .option('--json', 'print what was registered as JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('demo', demoFlags, raw);
      const gtFile = path.join(o.dir, 'ground_truth.json');
      if (!fs.existsSync(gtFile)) throw new CliError(`${gtFile} not found: run \`abacus sim --out ${o.dir}\` first`);
      const gt = JSON.parse(fs.readFileSync(gtFile, 'utf8')) as GroundTruthLite;
      const api = apiFrom(cmd);
      const done: string[] = [];
      for (const d of gt.domains) {
        if (!(await exists(api, '/business-lines', (ls) => ls.some((l) => l.name === d.name)))) {
          await api.post('/business-lines', {
            name: d.name,
            description: `simulated business line (${d.impressions} impressions)`,
          });
          done.push(`business line ${d.name}`);
        }
        const file = path.join(o.dir, 'samples', `${d.name}.parquet`);
        if (!fs.existsSync(file)) throw new CliError(`${file} not found: the world in ${o.dir} is incomplete`);
        const name = `demo-${d.name}`;
        if (!(await exists(api, `/sample-sets?businessLine=${d.name}&pageSize=500`, (ss) => ss.some((s) => s.name === name)))) {
          await api.upload('/sample-sets', file, {
            name,
            businessLine: d.name,
            label: 'click',
            time: 'ts',
            keys: 'impression_id,user_id,item_id,context_id,domain',
            shareWith: '*',
          });
          done.push(`sample set ${d.name}/${name}`);
        }
      }
      const owner = gt.domains[0].name;
      const tables: [string, string, string | undefined][] = [
        ['users', 'user_id', 'ts'],
        ['items', 'item_id', undefined],
        ['contexts', 'context_id', undefined],
      ];
      for (const [table, key, time] of tables) {
        const file = path.join(o.dir, `${table}.parquet`);
        if (!fs.existsSync(file)) continue;
        if (!(await exists(api, `/feature-tables?businessLine=${owner}`, (ts) => ts.some((t) => t.name === table)))) {
          await api.upload('/feature-tables', file, { name: table, businessLine: owner, entityKey: key, time });
          done.push(`feature table ${owner}/${table}`);
        }
      }
      // declared costs from the world's ground truth, so pruning and budgets can count what they save
      const registered = await api.get<{ items: { id: string; name: string; costs: Record<string, unknown> }[] }>(
        `/features?businessLine=${owner}&pageSize=500`,
      );
      let costed = 0;
      for (const f of registered.items) {
        const truth = gt.features.find((t) => t.name === f.name);
        if (!truth || f.costs.storageBytesPerEntity !== undefined) continue;
        await api.patch(`/features/${f.id}`, { costs: { ...truth.costs, source: 'declared' } });
        costed++;
      }
      if (costed) done.push(`costs of ${costed} feature(s)`);
      // a ready base model per line: the features in that line's config
      for (const d of gt.domains) {
        const models = await api.get<{ items: { name: string }[] }>(`/models?businessLine=${d.name}&pageSize=500`);
        if (models.items.some((m) => m.name === 'base')) continue;
        const sets = await api.get<{ items: { id: string; name: string }[] }>(`/sample-sets?businessLine=${d.name}&pageSize=500`);
        const ss = sets.items.find((s) => s.name === `demo-${d.name}`)!;
        const features = gt.features.filter((f) => f.inConfigOf.includes(d.name)).map((f) => f.name);
        await api.post('/models', { name: 'base', businessLine: d.name, sampleSetId: ss.id, features });
        done.push(`model ${d.name}/base (${features.length} features)`);
      }
      if (o.json) return printJson({ registered: done });
      process.stdout.write(done.length ? `registered:\n  ${done.join('\n  ')}\n` : 'demo world already registered\n');
    });
};
