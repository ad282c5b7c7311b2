import { TableReadError } from '@abacus/samples';
import { formatIvReport, ivReportFromFile, ScoringError } from '@abacus/scoring';
import { z } from 'zod';
import { parseFlags } from '../flags';
import { CliError, type RegisterCommand } from './command.types';

const ivFlags = z.object({
  label: z.string().min(1),
  positive: z.string().optional(),
  time: z.string().optional(),
  testFrom: z.string().optional(),
  bins: z.coerce.number().int().min(2).max(100).optional(),
  prebins: z.coerce.number().int().min(2).max(1000).optional(),
  minBinShare: z.coerce.number().min(0).max(0.5).optional(),
  minCategoryShare: z.coerce.number().min(0).max(0.5).optional(),
  exclude: z.string().optional(),
  json: z.boolean().optional(),
});

export const registerIv: RegisterCommand = (program) => {
  program
    .command('iv')
    .description('local WOE/IV (and PSI) report of every column of a CSV or Parquet file; no server needed')
    .argument('<file>', 'CSV or Parquet file')
    .requiredOption('--label <col>', 'label column (two classes)')
    .option('--positive <value>', 'event class of the label (default 1 / true)')
    .option('--time <col>', 'time column (numbers, dates or timestamps)')
    .option('--test-from <t>', 'rows with time >= t are the test range: bins are fitted before it, PSI compares after it')
    .option('--bins <n>', 'maximum bins per numeric feature (default 10)')
    .option('--prebins <n>', 'quantile pre-bins per numeric feature (default 20)')
    .option('--min-bin-share <x>', 'minimum share of rows per numeric bin (default 0.05)')
    .option('--min-category-share <x>', 'pool categories rarer than this share into __other__ (default 0: off)')
    .option('--exclude <cols>', 'comma-separated columns not to score (ids, keys)')
    .option('--json', 'print {"features": [...]} JSON sorted by IV')
    .action(async (file: string, raw: Record<string, unknown>) => {
      const f = parseFlags('iv', ivFlags, raw);
      if ((f.time === undefined) !== (f.testFrom === undefined))
        throw new CliError('--time and --test-from must be given together');
      try {
        const report = await ivReportFromFile(file, {
          label: f.label,
          positive: f.positive,
          time: f.time,
          testFrom: f.testFrom,
          maxBins: f.bins,
          prebins: f.prebins,
          minBinShare: f.minBinShare,
          minCategoryShare: f.minCategoryShare,
          exclude: f.exclude
            ? f.exclude
                .split(',')
                .map((s) => s.trim())
                .filter(Boolean)
            : [],
        });
        process.stdout.write(f.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatIvReport(report)}\n`);
      } catch (err) {
        if (err instanceof TableReadError || err instanceof ScoringError) throw new CliError(err.message);
        throw err;
      }
    });
};
