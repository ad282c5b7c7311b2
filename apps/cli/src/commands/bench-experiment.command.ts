import type { Command } from 'commander';
import { z } from 'zod';
import type { ApiClient } from '../api-client';
import { runAddBench } from '../bench/add-bench';
import { runDivideBench } from '../bench/divide-bench';
import { runMultiplyBench } from '../bench/multiply-bench';
import { onPlatform, writeJsonOut } from '../bench/private-platform';
import { runSubtractBench } from '../bench/subtract-bench';
import { apiFrom, printJson } from '../cli-context';
import { parseFlags } from '../flags';
import type { RegisterCommand } from './command.types';

const flags = z.object({
  rows: z.coerce.number().int().min(10_000).max(100_000_000).default(1_000_000),
  features: z.coerce.number().int().min(2).max(500).default(40),
  backend: z.enum(['cpu', 'cuda']).default('cpu'),
  seed: z.coerce.number().int().min(0).default(1),
  registerAt: z.string().min(1).optional(),
  simTileRows: z.coerce.number().int().min(10_000).max(20_000_000).default(10_000_000),
  private: z.boolean().optional(),
  threads: z.coerce.number().int().min(0).max(1024).default(0),
  hostFits: z.coerce.number().int().min(0).max(64).default(0),
  scoreBuildWaitMs: z.coerce.number().int().min(0).max(3_600_000).optional(),
  firstEpoch: z.enum(['shuffled', 'inOrder']).optional(),
  out: z.string().min(1).optional(),
  json: z.boolean().optional(),
});

/** `a,b,c` → ['a', 'b', 'c'] */
const commaList = z.string().transform((v) => v.split(',').map((x) => x.trim()));

const multiplyFlags = z.object({
  config: z.string().min(1).default('configs/examples/multiply.json'),
  seeds: commaList
    .transform((xs) => xs.map(Number))
    .pipe(z.array(z.number().int().min(0)).min(1))
    .optional(),
  strategies: commaList.pipe(z.array(z.enum(['union', 'pretrain_finetune'])).min(1)).optional(),
  reuse: z.boolean().optional(),
  world: z.string().min(1).optional(),
  simSeed: z.coerce.number().int().min(0).default(7),
  rows: z.coerce.number().int().min(10_000).max(20_000_000).default(400_000),
  json: z.boolean().optional(),
});

const addFlags = flags.extend({ candidates: z.coerce.number().int().min(1).max(64).default(10) });
const divideFlags = flags.extend({ tiers: z.coerce.number().int().min(2).max(8).default(4) });

/**
 * The options every experiment bench on a simulated world takes (subtract, add, divide): the table,
 * the backend, where the samples go, the platform, the output.
 */
function worldBenchOptions(c: Command, features: string): Command {
  return c
    .option('--rows <n>', 'impressions to simulate (all lines in one sample set)', '1000000')
    .option('--features <n>', features, '40')
    .option('--backend <b>', 'cpu | cuda: the backend the worker is expected to run (ABACUS_RUNTIME_BACKEND)', 'cpu')
    .option('--seed <n>', 'world and experiment seed', '1')
    .option(
      '--register-at <dir>',
      'write the samples under this folder as day=N/ partitions and register them by reference (file://), instead of uploading them; or upload the partitions to s3://bucket/prefix/ and register that',
    )
    .option(
      '--sim-tile-rows <n>',
      'impressions simulated at once (the simulator holds them in memory): more --rows repeat that world in later periods, each with clicks drawn again (needs --register-at)',
      '10000000',
    )
    .option(
      '--private',
      'start a private api + one worker (own database, queue prefix and data dir) from dist/ on --backend, instead of using the running API',
    )
    .option('--threads <n>', 'with --private: runtime threads of its worker (0 = all cores)', '0')
    .option('--host-fits <n>', "with --private: its worker's ABACUS_HOST_FITS, CPU fits a trial trains at once (0 = min(4, cores))", '0')
    .option(
      '--score-build-wait-ms <ms>',
      "with --private: its worker's ABACUS_SCORE_BUILD_WAIT_MS, how long IV scoring waits for a sample build (0 = beside it; default 120000)",
    )
    .option(
      '--first-epoch <how>',
      "the model's training.firstEpoch: shuffled, or inOrder (the base fit starts on the samples while they are built); default the platform's",
    )
    .option('--out <file>', 'also write the JSON to this file')
    .option('--json', 'print JSON');
}

/**
 * Runs one world bench (on a private platform with --private), adds the platform and the command
 * to its JSON, writes --out, and prints the JSON or the stages with `lines` after them.
 */
async function runWorldBench(
  kind: 'subtract' | 'add' | 'divide',
  opts: z.output<typeof flags>,
  cmd: Command,
  run: (api: ApiClient, log: (l: string) => void) => Promise<Record<string, unknown>>,
  title: (res: Record<string, unknown>) => string,
  lines: (res: Record<string, unknown>) => string[] = () => [],
): Promise<void> {
  const log = (l: string) => process.stderr.write(`[bench] ${l}\n`);
  const bench = await onPlatform(
    opts.private
      ? {
          workers: 1,
          name: kind,
          env: {
            ABACUS_RUNTIME_BACKEND: opts.backend,
            ABACUS_RUNTIME_THREADS: String(opts.threads),
            ABACUS_HOST_FITS: String(opts.hostFits),
            ...(opts.scoreBuildWaitMs !== undefined ? { ABACUS_SCORE_BUILD_WAIT_MS: String(opts.scoreBuildWaitMs) } : {}),
          },
        }
      : null,
    () => apiFrom(cmd),
    log,
    (api) => run(api, log),
  );
  const res: Record<string, unknown> = {
    ...bench,
    platform: opts.private
      ? `private api + 1 worker process, backend ${opts.backend}, threads ${opts.threads || 'all'}, host fits ${opts.hostFits || 'default'}${opts.scoreBuildWaitMs !== undefined ? `, score build wait ${opts.scoreBuildWaitMs} ms` : ''}`
      : 'the running api',
    command: `abacus ${process.argv.slice(2).join(' ')}`,
  };
  writeJsonOut(opts.out, res);
  if (opts.json) return printJson(res);
  const s = res.stages as Record<string, number>;
  process.stdout.write(
    `${title(res)}: ${res.experimentMs} ms in the platform (${res.clientWallMs} ms at the client)\n` +
      Object.entries(s)
        .map(([k, v]) => `  ${k.padEnd(24)} ${String(v).padStart(8)} ms`)
        .join('\n') +
      `\n  ${'other'.padEnd(24)} ${String(res.otherMs).padStart(8)} ms\nslowest: ${res.slowestStage}\n` +
      lines(res)
        .map((l) => `${l}\n`)
        .join(''),
  );
}

/**
 * `abacus bench experiment subtract | add | divide | multiply`: end-to-end time of one experiment
 * through the running api + worker, split by stage.
 */
export const registerBenchExperiment: RegisterCommand = (program) => {
  const bench = program.commands.find((c) => c.name() === 'bench') ?? program.command('bench').description('benchmarks');
  const experiment = bench
    .command('experiment')
    .description('end-to-end benchmarks of experiments through the running api + worker');
  worldBenchOptions(
    experiment
      .command('subtract')
      .description(
        'one subtract experiment on a simulated world: wall time split into queue wait, sample building, training, scoring, ablation, retraining and database writes',
      ),
    "features of the model (past the simulator's own, per-impression noise columns)",
  ).action(async (raw: Record<string, unknown>, cmd: Command) => {
    const opts = parseFlags('bench experiment subtract', flags, raw);
    await runWorldBench(
      'subtract',
      opts,
      cmd,
      (api, log) => runSubtractBench(api, { ...opts, onStatus: log }),
      (res) => `subtract on ${res.rows} rows x ${res.features} features`,
    );
  });
  worldBenchOptions(
    experiment
      .command('add')
      .description(
        "one add experiment on a simulated world (base: the first --features features; candidates: the simulator's features with an effect the base leaves out, then noise columns): wall time split into queue wait, sample building, base and augmented training, the screen and contribution shuffles, leave-one-in refits, bootstraps and database writes; verdict counts",
      ),
    "features of the base model (past the simulator's own, per-impression noise columns)",
  )
    .option(
      '--candidates <n>',
      "candidates to add: the simulator's features with a planted effect that the base leaves out (strongest first), then per-impression noise columns",
      '10',
    )
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const opts = parseFlags('bench experiment add', addFlags, raw);
      await runWorldBench(
        'add',
        opts,
        cmd,
        (api, log) => runAddBench(api, { ...opts, onStatus: log }),
        (res) => `add on ${res.rows} rows x ${res.features} features + ${(res.candidates as { count: number }).count} candidates`,
        (res) => {
          const v = res.verdicts as { adopted: number; rejected: number; inconclusive: number; leaveOneIn: number };
          return [
            `verdicts: ${v.adopted} adopted, ${v.rejected} rejected, ${v.inconclusive} inconclusive (${v.leaveOneIn} with leave-one-in refits)`,
          ];
        },
      );
    });
  worldBenchOptions(
    experiment
      .command('divide')
      .description(
        'one divide experiment on a simulated world (the features with declared costs, --tiers budget tiers): wall time split into queue wait, sample building, training, ablation, database writes, selection, tier retraining and publishing; feature count and test AUC per tier',
      ),
    "features of the model (past the simulator's own, per-impression noise columns)",
  )
    .option(
      '--tiers <n>',
      'budget tiers, the full model included: 1, then evenly 0.7 … 0.3 of its cost (4: 1, 0.7, 0.5, 0.3)',
      '4',
    )
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const opts = parseFlags('bench experiment divide', divideFlags, raw);
      await runWorldBench(
        'divide',
        opts,
        cmd,
        (api, log) => runDivideBench(api, { ...opts, onStatus: log }),
        (res) => `divide on ${res.rows} rows x ${res.features} features, ${res.tiers} tiers`,
        (res) =>
          (res.frontier as { tier: number; milp: { features: number; auc: number } | null }[]).map(
            (f) => `  tier ${f.tier}: ${f.milp?.features ?? 0} features, test AUC ${f.milp ? f.milp.auc.toFixed(4) : '-'}`,
          ),
      );
    });
  registerMultiply(experiment);
};

/** `abacus bench experiment multiply`: the demo world's multiply example, by phase. */
function registerMultiply(experiment: Command): void {
  experiment
    .command('multiply')
    .description(
      'the multiply example on the demo world: wall time split into queue wait, union alignment, sample building, training per strategy, compare (bootstrap) and the rest; fresh sample sets unless --reuse',
    )
    .option('--config <file>', 'the multiply experiment file', 'configs/examples/multiply.json')
    .option('--seeds <list>', "training seeds, e.g. 1,2,3 (default: the file's)")
    .option('--strategies <list>', "union,pretrain_finetune (default: the file's)")
    .option(
      '--reuse',
      'use the sample sets the file names (imported when missing), so earlier union files, samples and models may be reused',
    )
    .option('--world <dir>', 'a world written by `abacus sim` (default: simulate one with --sim-seed and --rows)')
    .option('--sim-seed <n>', "the simulated world's seed (the quick start's: 7)", '7')
    .option('--rows <n>', "impressions of the simulated world (the quick start's: 400000)", '400000')
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>, cmd: Command) => {
      const opts = parseFlags('bench experiment multiply', multiplyFlags, raw);
      const res = await runMultiplyBench(apiFrom(cmd), {
        ...opts,
        reuse: opts.reuse === true,
        onStatus: (l) => process.stderr.write(`[bench] ${l}\n`),
      });
      if (opts.json) return printJson({ ...res, command: `abacus ${process.argv.slice(2).join(' ')}` });
      process.stdout.write(formatMultiply(res));
    });
}

function formatMultiply(res: Awaited<ReturnType<typeof runMultiplyBench>>): string {
  const p = res.phases;
  const row = (k: string, v: number, note = '') => `  ${k.padEnd(28)} ${String(v).padStart(8)} ms${note ? `  ${note}` : ''}`;
  const r = res.reused;
  // fresh sets: whatever was reused was written earlier in this same experiment (union and pretrain share a source group's file and samples)
  const where = res.fresh ? ' (earlier in this run)' : '';
  return [
    `multiply on ${res.businessLine} (${res.models.length} models x ${res.seeds.length} seeds): ${res.experimentMs} ms in the platform (${res.clientWallMs} ms at the client)`,
    row('queueWait', p.queueWaitMs),
    row('unionAlign', p.unionAlignMs, `${r.unionFiles.reused} of ${r.unionFiles.of} union files reused${where}`),
    row('sampleBuild', p.sampleBuildMs, `${r.builtSamples.reused} of ${r.builtSamples.of} built sample sets reused${where}`),
    ...Object.entries(p.trainingMs).map(([k, v]) => row(`training ${k}`, v)),
    row('training (all)', res.trainingTotalMs, `${r.models.reused} of ${r.models.of} models reused${where}`),
    row('compare', p.compareMs, res.bootstrapMs === null ? '' : `bootstrap ${res.bootstrapMs} ms`),
    row('other', p.otherMs),
    `slowest: ${res.slowestPhase}${res.overlapping ? ' (trials overlapped: phase sums exceed the wall time)' : ''}`,
    `sample sets: ${res.sampleSets.map((s) => `${s.used} (${s.rows} rows, ${s.imported ? 'imported' : 'reused'})`).join(', ')}`,
    '',
  ].join('\n');
}
