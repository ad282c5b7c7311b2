import type { FeatureKind, Table } from '@abacus/samples';
import type { FittedBinning } from './binning.types';
import { fitCategoricalBinning } from './categorical-binning';
import type { FeatureScore, IvReport } from './iv-report.types';
import { encodeLabel } from './label-encoder';
import { fitMultiIdBinning } from './multi-id-binning';
import { fitNumericBinning } from './numeric-binning';
import { psi } from './psi';
import { scoreTableOptionsSchema, type ParsedScoreTableOptions, type ScoreTableOptions } from './score-table-options.schema';
import { ScoringError } from './scoring.error';
import { WOE_CONVENTION, computeWoe } from './woe-stats';

const round = (x: number, d = 6): number => Math.round(x * 10 ** d) / 10 ** d;

/**
 * WOE/IV of every feature column of a table (all columns but the label, the time column and `exclude`).
 * Bins are fitted on the train range (time < testFrom) when a time split is given, else on all rows;
 * PSI then compares the test range with the train range over the train bins. Sorted by IV, descending.
 */
export function scoreTable(table: Table, options: ScoreTableOptions): IvReport {
  const run = prepare(table, options);
  return run.report(run.columns.map((col) => run.score(col)));
}

/**
 * scoreTable, giving the event loop a turn after every column: the same report, but a worker scoring
 * a large table (minutes at 10M rows x 100 features) still renews its job lock and answers signals
 * meanwhile. `onColumn` is told how many columns are done.
 */
export async function scoreTableAsync(
  table: Table,
  options: ScoreTableOptions,
  onColumn?: (done: number, of: number) => void | Promise<void>,
): Promise<IvReport> {
  const run = prepare(table, options);
  const features: FeatureScore[] = [];
  for (const col of run.columns) {
    features.push(run.score(col));
    await new Promise<void>((resolve) => setImmediate(resolve));
    await onColumn?.(features.length, run.columns.length);
  }
  return run.report(features);
}

/** The label, the fitted (and test) rows and the feature columns of a table; one column at a time. */
function prepare(table: Table, options: ScoreTableOptions) {
  const opts = parseScoreOptions(options);
  const find = columnFinder(table.file, table.columns);
  const labelCol = find(opts.label, 'label');
  for (const e of opts.exclude) find(e, 'excluded');
  const { y, positive } = encodeLabel(labelCol, opts.positive);

  let fitRows: Int32Array;
  let testRows: Int32Array | undefined;
  if (opts.time !== undefined && opts.testFrom !== undefined) {
    const timeCol = find(opts.time, 'time');
    if (timeCol.kind !== 'numeric') throw timeKindError(opts.time, timeCol.kind);
    const testFrom = parseTestFrom(opts.testFrom);
    const fit: number[] = [];
    const test: number[] = [];
    timeCol.values.forEach((t, r) => {
      if (Number.isNaN(t)) return;
      (t < testFrom ? fit : test).push(r);
    });
    checkSplit(opts.testFrom, fit.length, test.length);
    fitRows = Int32Array.from(fit);
    testRows = Int32Array.from(test);
  } else {
    fitRows = Int32Array.from({ length: table.rowCount }, (_, r) => r);
  }
  let events = 0;
  for (const r of fitRows) events += y[r];
  checkBothClasses(opts.label, events, fitRows.length);

  const skip = featureSkip(opts);
  const columns = table.columns.filter((col) => !skip.has(col.name));
  const score = (col: Table['columns'][number]): FeatureScore => {
    let binning: FittedBinning;
    if (col.kind === 'numeric') binning = fitNumericBinning(col.values, y, fitRows, opts);
    else if (col.kind === 'categorical') binning = fitCategoricalBinning(col.codes, col.dictionary, y, fitRows, opts);
    else binning = fitMultiIdBinning(col.offsets, col.ids, y, fitRows, opts);
    return featureScore(col.name, col.kind, binning, testRows && binning.countRows(testRows), opts);
  };
  const rows = testRows ? { fit: fitRows.length, test: testRows.length } : { fit: fitRows.length };
  const report = (features: FeatureScore[]): IvReport => ivReport(opts, positive, rows, events, features);
  return { columns, score, report };
}

/** Validated scoring options (ScoringError naming every bad field). */
export function parseScoreOptions(options: ScoreTableOptions): ParsedScoreTableOptions {
  const parsed = scoreTableOptionsSchema.safeParse(options);
  if (!parsed.success)
    throw new ScoringError(
      `invalid scoring options: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(options)'}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

/** A column of `file` by name, or a ScoringError naming its role and the columns there are. */
export function columnFinder<C extends { name: string }>(file: string, columns: readonly C[]): (name: string, role: string) => C {
  const names = columns.map((c) => c.name);
  return (name, role) => {
    const col = columns.find((c) => c.name === name);
    if (!col) throw new ScoringError(`${role} column '${name}' not found in ${file} (available: ${names.join(', ')})`);
    return col;
  };
}

export function timeKindError(name: string, kind: FeatureKind): ScoringError {
  return new ScoringError(`time column '${name}' must be numeric or a date/timestamp (it is ${kind})`);
}

export function checkSplit(testFrom: number | string, fit: number, test: number): void {
  if (fit === 0 || test === 0) {
    throw new ScoringError(`test-from ${testFrom} leaves ${fit} train and ${test} test rows; both must be non-empty`);
  }
}

export function checkBothClasses(label: string, events: number, fitRows: number): void {
  if (events === 0 || events === fitRows) throw new ScoringError(`the fitted rows hold only one class of label '${label}'`);
}

/** The columns that are not features: the label, the time column and the excluded ones. */
export function featureSkip(opts: ParsedScoreTableOptions): Set<string> {
  return new Set([opts.label, ...(opts.time ? [opts.time] : []), ...opts.exclude]);
}

/** One feature's entry of the report from its fitted bins (and the test rows counted over them). */
export function featureScore(
  name: string,
  kind: FeatureKind,
  binning: Pick<FittedBinning, 'labels' | 'counts' | 'events' | 'trend'>,
  testCounts: Float64Array | undefined,
  opts: ParsedScoreTableOptions,
): FeatureScore {
  const nonEvents = binning.counts.map((c, i) => c - binning.events[i]);
  const w = computeWoe(binning.events, nonEvents, opts.smoothing);
  const bins = binning.labels
    .map((label, i) => ({
      range_or_values: label,
      count: round(binning.counts[i]),
      events: round(binning.events[i]),
      woe: round(w.woe[i]),
      iv: round(w.ivTerms[i], 8),
    }))
    .filter((_, i) => binning.counts[i] > 0);
  const out: FeatureScore = { name, kind, iv: round(w.iv, 8), bins };
  if (binning.trend) out.trend = binning.trend;
  if (testCounts) out.psi = round(psi(binning.counts, testCounts, opts.smoothing), 8);
  return out;
}

/** The report of scored features, highest IV first (ties by name). */
export function ivReport(
  opts: ParsedScoreTableOptions,
  positive: string,
  rows: IvReport['rows'],
  events: number,
  features: FeatureScore[],
): IvReport {
  features.sort((a, b) => b.iv - a.iv || (a.name < b.name ? -1 : 1));
  return {
    label: opts.label,
    positive,
    woeConvention: WOE_CONVENTION,
    smoothing: `when a bin has 0 events or 0 non-events, ${opts.smoothing} is added to the event and non-event counts of every non-empty bin: dist_i = (c_i + ${opts.smoothing}) / (C + ${opts.smoothing} * k)`,
    rows,
    events,
    features,
  };
}

export function parseTestFrom(v: number | string): number {
  if (typeof v === 'number') return v;
  const n = Number(v);
  if (Number.isFinite(n)) return n;
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) throw new ScoringError(`test-from '${v}' is neither a number nor a date`);
  return ms / 1000; // timestamps are read as epoch seconds
}
