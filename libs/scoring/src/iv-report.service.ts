import { readTable } from '@abacus/samples';
import type { IvReport } from './iv-report.types';
import { scoreTable } from './iv-scorer';
import type { ScoreTableOptions } from './score-table-options.schema';

/** Reads a CSV/Parquet file and scores it locally; what `abacus iv` runs. */
export async function ivReportFromFile(file: string, options: ScoreTableOptions): Promise<IvReport> {
  const table = await readTable(file);
  return scoreTable(table, options);
}
