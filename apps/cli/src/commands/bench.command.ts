import { runRuntimeBench } from '@abacus/runtime';
import { z } from 'zod';
import { parseFlags } from '../flags';
import type { RegisterCommand } from './command.types';

const benchFlags = z.object({
  backend: z.enum(['cpu', 'cuda', 'tfjs']).default('cpu'),
  model: z.literal('ctr26').default('ctr26'),
  batch: z.coerce
    .number()
    .int()
    .min(1)
    .max(1 << 20)
    .default(8192),
  steps: z.coerce.number().int().min(1).max(100_000).default(64),
  threads: z.coerce.number().int().min(1).max(1024).default(2),
  vocab: z.coerce.number().int().min(10).max(10_000_000).default(100_000),
  batches: z.coerce.number().int().min(5).max(10_000).default(40),
  evalRows: z.coerce.number().int().min(1).optional(),
  shuffle: z.boolean().default(false),
  ablation: z.boolean().optional(),
  trace: z.boolean().optional(),
  data: z.string().min(1).optional(),
  aucSeeds: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'comma-separated seeds, e.g. 0,1,2,3')
    .transform((v) => v.split(',').map(Number))
    .optional(),
  json: z.boolean().optional(),
});

export const registerBench: RegisterCommand = (program) => {
  const bench = program.command('bench').description('benchmarks');
  bench
    .command('runtime')
    .description('train + evaluate the reference CTR model (ctr26) on synthetic data; prints samples/s and test AUC')
    .option('--backend <b>', 'cpu | cuda | tfjs', 'cpu')
    .option('--model <m>', 'reference model (ctr26)', 'ctr26')
    .option('--batch <n>', 'batch size', '8192')
    .option('--steps <n>', 'timed training steps', '64')
    .option('--threads <n>', 'CPU threads', '2')
    .option('--vocab <n>', 'rows per slot (100000 = the reference)', '100000')
    .option('--batches <n>', 'batches of synthetic data, 4/5 train', '40')
    .option('--eval-rows <n>', 'evaluate on the first n test rows only')
    .option('--shuffle', 'shuffle training batches (the PyTorch peer does not)')
    .option('--ablation', 'also time shuffle ablation of 26 slots x 3 repeats against 78 evaluation passes')
    .option('--trace', 'cuda: CUPTI trace of 10 training steps and one predict (launch counts, per-kernel times)')
    .option('--data <dir>', "the PyTorch peer's own rows, written by libs/runtime/bench/peer_data.py")
    .option('--auc-seeds <list>', "model seeds whose test AUC on the peer's schedule is also reported, e.g. 0,1,2,3")
    .option('--json', 'print JSON')
    .action(async (raw: Record<string, unknown>) => {
      const flags = parseFlags('bench runtime', benchFlags, raw);
      const { data, aucSeeds, ...f } = flags;
      const res = await runRuntimeBench(
        {
          ...f,
          command: `abacus ${process.argv.slice(2).join(' ')}`,
          ...(f.evalRows ? { evalRows: f.evalRows } : {}),
          ...(data ? { dataDir: data } : {}),
          ...(aucSeeds ? { aucSeeds } : {}),
        },
        f.json ? () => {} : (s) => process.stderr.write(`${s}\n`),
      );
      process.stdout.write(f.json ? `${JSON.stringify(res)}\n` : `${JSON.stringify(res, null, 2)}\n`);
    });
};
