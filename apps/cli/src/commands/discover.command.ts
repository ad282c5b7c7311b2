import type { Command } from 'commander';
import { z } from 'zod';
import { lineName } from '@abacus/catalog';
import { apiFrom, printJson } from '../cli-context';
import { parseFlags } from '../flags';
import { CliError, type RegisterCommand } from './command.types';
import { exitCodeFor, renderExperiment, waitFor, type Experiment } from './experiment.command';

const list = z
  .string()
  .optional()
  .transform((s) => (s ? s.split(',').map((x) => x.trim()).filter(Boolean) : undefined));

const discoverFlags = z.object({
  domain: lineName,
  model: z.string().min(1).max(220).optional(),
  samples: z.string().min(1).max(200).optional(),
  features: list,
  families: list,
  windows: list,
  maxCandidates: z.coerce.number().int().optional(),
  top: z.coerce.number().int().optional(),
  seeds: z.coerce.number().int().optional(),
  screenRows: z.coerce.number().int().optional(),
  register: z.boolean().optional(),
  name: z.string().max(200).optional(),
  wait: z.boolean().optional(),
  timeout: z.coerce.number().int().min(1).default(3600),
  json: z.boolean().optional(),
});

export const registerDiscover: RegisterCommand = (program) => {
  program
    .command('discover')
    .description(
      'propose new features: screen candidate expressions (ratios, crosses, point-in-time aggregates, …) against a model, verify the best with add, register the adopted',
    )
    .requiredOption('--domain <line>', 'business line')
    .option('--model <model>', 'the base model (id, name or name@version)')
    .option('--samples <set>', 'or a sample set (with --features, default: all its columns)')
    .option('--features <a,b,…>', 'the base features with --samples')
    .option('--families <f,…>', 'column, log, ratio, product, difference, cross, count, rate, mean, sum, distinct, since, freq (default: all)')
    .option('--windows <w,…>', 'window lengths of the aggregates (default 1d,7d,30d)')
    .option('--max-candidates <n>', 'candidates screened at most (default 2000)')
    .option('--top <k>', 'candidates sent to the verified comparison (default 10)')
    .option('--seeds <n>', 'training seeds of the verified comparison (default 10)')
    .option('--screen-rows <n>', 'fitted rows the screen reads (default 200000)')
    .option('--no-register', 'do not register the adopted expressions as features')
    .option('--name <name>', 'experiment name')
    .option('--wait', 'follow progress until it finishes; exit 0 succeeded, 2 failed, 3 cancelled')
    .option('--timeout <seconds>', 'give up waiting after this long', '3600')
    .option('--json', 'print the experiment as JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const o = parseFlags('discover', discoverFlags, raw);
      if (!!o.model === !!o.samples) throw new CliError('discover: name the base as --model or as --samples (not both)');
      if (o.features && !o.samples) throw new CliError('discover: --features goes with --samples');
      const spec: Record<string, unknown> = {
        base: o.model ? { model: o.model } : { sampleSet: o.samples, ...(o.features ? { features: o.features } : {}) },
        ...(o.families ? { families: o.families } : {}),
        ...(o.windows ? { windows: o.windows } : {}),
        ...(o.maxCandidates !== undefined ? { maxCandidates: o.maxCandidates } : {}),
        ...(o.top !== undefined ? { topK: o.top } : {}),
        ...(o.seeds !== undefined ? { seeds: o.seeds } : {}),
        ...(o.screenRows !== undefined ? { screenRows: o.screenRows } : {}),
        ...(o.register === false ? { register: false } : {}),
      };
      const api = apiFrom(cmd);
      let e = await api.post<Experiment>('/experiments', { kind: 'discover', businessLine: o.domain, name: o.name ?? '', spec });
      if (!o.json) process.stderr.write(`submitted discover experiment ${e.id} (${e.trials.length} trials)\n`);
      if (o.wait) e = await waitFor(api, e.id, !!o.json, o.timeout);
      if (o.json) printJson(e);
      else process.stdout.write(`${o.wait ? renderExperiment(e) : e.id}\n`);
      if (o.wait) process.exitCode = exitCodeFor(e.status);
    });
};
