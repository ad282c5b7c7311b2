import type { Table } from '@abacus/samples';
import type { BinningOptions, FittedBinning } from './binning.types';
import { fitCategoricalBinning } from './categorical-binning';
import type { FeatureScore, IvReport } from './iv-report.types';
import { encodeLabel } from './label-encoder';
import { fitMultiIdBinning } from './multi-id-binning';
import { fitNumericBinning } from './numeric-binning';
import { psi } from './psi';
import { scoreTableOptionsSchema, type ScoreTableOptions } from './score-table-options.schema';
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
  const parsed = scoreTableOptionsSchema.safeParse(options);
  if (!parsed.success)
    throw new ScoringError(
      `invalid scoring options: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(options)'}: ${i.message}`).join('; ')}`,
    );
  const opts = parsed.data;
  const names = table.columns.map((c) => c.name);
  const find = (name: string, role: string) => {
    const col = table.columns.find((c) => c.name === name);
    if (!col) throw new ScoringError(`${role} column '${name}' not found in ${table.file} (available: ${names.join(', ')})`);
    return col;
  };
  const labelCol = find(opts.label, 'label');
  for (const e of opts.exclude) find(e, 'excluded');
  const { y, positive } = encodeLabel(labelCol, opts.positive);

  let fitRows: Int32Array;
  let testRows: Int32Array | undefined;
  if (opts.time !== undefined && opts.testFrom !== undefined) {
    const timeCol = find(opts.time, 'time');
    if (timeCol.kind !== 'numeric')
      throw new ScoringError(`time column '${opts.time}' must be numeric or a date/timestamp (it is ${timeCol.kind})`);
    const testFrom = parseTestFrom(opts.testFrom);
    const fit: number[] = [];
    const test: number[] = [];
    timeCol.values.forEach((t, r) => {
      if (Number.isNaN(t)) return;
      (t < testFrom ? fit : test).push(r);
    });
    if (fit.length === 0 || test.length === 0) {
      throw new ScoringError(
        `test-from ${opts.testFrom} leaves ${fit.length} train and ${test.length} test rows; both must be non-empty`,
      );
    }
    fitRows = Int32Array.from(fit);
    testRows = Int32Array.from(test);
  } else {
    fitRows = Int32Array.from({ length: table.rowCount }, (_, r) => r);
  }
  let events = 0;
  for (const r of fitRows) events += y[r];
  if (events === 0 || events === fitRows.length)
    throw new ScoringError(`the fitted rows hold only one class of label '${opts.label}'`);

  const binOpts: BinningOptions = opts;
  const skip = new Set([opts.label, ...(opts.time ? [opts.time] : []), ...opts.exclude]);
  const columns = table.columns.filter((col) => !skip.has(col.name));
  const score = (col: Table['columns'][number]): FeatureScore => {
    let binning: FittedBinning;
    if (col.kind === 'numeric') binning = fitNumericBinning(col.values, y, fitRows, binOpts);
    else if (col.kind === 'categorical') binning = fitCategoricalBinning(col.codes, col.dictionary, y, fitRows, binOpts);
    else binning = fitMultiIdBinning(col.offsets, col.ids, y, fitRows, binOpts);
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
    const out: FeatureScore = { name: col.name, kind: col.kind, iv: round(w.iv, 8), bins };
    if (binning.trend) out.trend = binning.trend;
    if (testRows) out.psi = round(psi(binning.counts, binning.countRows(testRows), opts.smoothing), 8);
    return out;
  };
  const report = (features: FeatureScore[]): IvReport => {
    features.sort((a, b) => b.iv - a.iv || (a.name < b.name ? -1 : 1));
    return {
      label: opts.label,
      positive,
      woeConvention: WOE_CONVENTION,
      smoothing: `when a bin has 0 events or 0 non-events, ${opts.smoothing} is added to the event and non-event counts of every non-empty bin: dist_i = (c_i + ${opts.smoothing}) / (C + ${opts.smoothing} * k)`,
      rows: testRows ? { fit: fitRows.length, test: testRows.length } : { fit: fitRows.length },
      events,
      features,
    };
  };
  return { columns, score, report };
}

function parseTestFrom(v: number | string): number {
  if (typeof v === 'number') return v;
  const n = Number(v);
  if (Number.isFinite(n)) return n;
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) throw new ScoringError(`test-from '${v}' is neither a number nor a date`);
  return ms / 1000; // timestamps are read as epoch seconds
}
