/**
 * Result JSON → chart rows. Pure and defensive: results of running experiments are absent and old
 * results may lack fields, so every reader here takes `unknown` and drops what it cannot use.
 */
import { tierAlias } from '@abacus/workflows/browser';

/** One estimate with its interval (a dot and a bar), e.g. ΔAUC of a strategy × source. */
export interface IntervalRow {
  label: string;
  value: number;
  low: number | null;
  high: number | null;
  /** colour class and legend entry: a verdict, accepted/rejected, remove/keep */
  group: string;
}

/** A horizontal dot-and-interval chart with reference lines (0, minGain). */
export interface IntervalChart {
  kind: 'interval';
  title: string;
  axis: string;
  rows: IntervalRow[];
  refs: { value: number; label: string }[];
}

export interface ScatterPoint {
  x: number;
  y: number;
  /** the interval on y, where there is one */
  low: number | null;
  high: number | null;
  series: string;
  label: string;
}

/** Points in x/y, per series, optionally joined by a line (a frontier, a pruning curve). */
export interface ScatterChart {
  kind: 'scatter';
  title: string;
  xAxis: string;
  yAxis: string;
  points: ScatterPoint[];
  /** series whose points are joined in order of x */
  lines: string[];
  refs: { value: number; label: string }[];
  /** x counts things (features removed): only whole-number ticks */
  xIntegers?: boolean;
  /** series whose points carry their label beside the dot (e.g. divide's tiers) */
  labelled?: string[];
}

/** One bar from 0 (negative values to the left), e.g. a feature's IV or a bin's WOE. */
export interface BarRow {
  label: string;
  value: number;
  group: string;
  /** extra words for the bar's tooltip (rows in a bin, event rate) */
  note?: string;
}

/** Horizontal bars from 0 with reference lines (IV strength thresholds). */
export interface BarChart {
  kind: 'bars';
  title: string;
  axis: string;
  rows: BarRow[];
  refs: { value: number; label: string }[];
}

export type Chart = IntervalChart | ScatterChart | BarChart;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown, dflt = ''): string => (typeof v === 'string' ? v : dflt);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const objs = (v: unknown): Obj[] => list(v).filter(isObj);

/** An interval object `{ [valueKey], ciLow, ciHigh }` as a row's numbers, or null when it has no value. */
function interval(v: unknown, valueKey: string): { value: number; low: number | null; high: number | null } | null {
  if (!isObj(v)) return null;
  const value = num(v[valueKey]);
  if (value === null) return null;
  return { value, low: num(v.ciLow), high: num(v.ciHigh) };
}

/**
 * multiply: ΔAUC per strategy × source against the target-only baseline, coloured by verdict. Results
 * that name their splits get two rows per arm: the validation ΔAUC the verdict read, and the test ΔAUC
 * reported; older ones one row, unlabelled.
 */
export function multiplyCharts(result: unknown): Chart[] {
  if (!isObj(result)) return [];
  const rows: IntervalRow[] = [];
  const split = (o: unknown) => (isObj(o) && typeof o.split === 'string' ? ` (${o.split})` : '');
  for (const r of objs(result.results)) {
    const d = interval(r.deltaAuc, 'delta');
    if (!d) continue;
    const sources = list(r.sources).filter((s): s is string => typeof s === 'string');
    const label = `${str(r.strategy, '?')} · ${sources.join(' + ') || '?'}`;
    const group = str(r.verdict, 'unknown');
    const v = interval(r.validation, 'delta');
    if (v) rows.push({ label: `${label}${split(r.validation)}`, ...v, group });
    rows.push({ label: `${label}${split(r.deltaAuc)}`, ...d, group });
  }
  if (!rows.length) return [];
  return [
    { kind: 'interval', title: 'ΔAUC against the target-only baseline', axis: 'ΔAUC', rows, refs: [{ value: 0, label: '0' }] },
  ];
}

/** The mean of a cost-fraction object's resources, or one of them. */
export type CostAxis = 'mean' | 'storage' | 'communication' | 'compute';
export const COST_AXES: readonly CostAxis[] = ['mean', 'storage', 'communication', 'compute'];

function costOf(v: unknown, axis: CostAxis): number | null {
  if (!isObj(v)) return null;
  if (axis !== 'mean') return num(v[axis]);
  const xs = [num(v.storage), num(v.communication), num(v.compute)].filter((x): x is number => x !== null);
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}

/** divide: the cost–value frontier, MILP and greedy points per tier and the full model at cost 1. */
export function divideCharts(result: unknown, axis: CostAxis = 'mean'): Chart[] {
  if (!isObj(result)) return [];
  const points: ScatterPoint[] = [];
  let fullAuc: number | null = null;
  for (const f of objs(result.frontier)) {
    const tier = num(f.tier);
    const name = str(f.alias, tier === null ? 'tier' : tierAlias(tier));
    for (const series of ['milp', 'greedy'] as const) {
      const p = f[series];
      if (!isObj(p)) continue;
      const x = costOf(p.costFractions, axis);
      const y = num(p.auc);
      if (x === null || y === null) continue;
      const spread = num(p.seedSpread);
      points.push({
        x,
        y,
        low: spread === null ? null : y - spread / 2,
        high: spread === null ? null : y + spread / 2,
        series,
        label: name,
      });
      // the full model's AUC follows from any point's share of the lift over 0.5 kept
      const lift = num(p.liftKept);
      if (fullAuc === null && lift !== null && lift > 0) fullAuc = 0.5 + (y - 0.5) / lift;
    }
  }
  if (!points.length) return [];
  if (isObj(result.full) && num(result.full.auc) !== null) fullAuc = num(result.full.auc);
  if (fullAuc !== null) points.push({ x: 1, y: fullAuc, low: null, high: null, series: 'full model', label: 'full' });
  const axisName = axis === 'mean' ? 'cost (mean of storage, communication, compute)' : `${axis} cost`;
  return [
    {
      kind: 'scatter',
      title: 'Cost–value frontier',
      xAxis: `${axisName}, fraction of the full model`,
      yAxis: 'retrained AUC',
      points,
      lines: ['milp', 'greedy'],
      refs: [],
      labelled: ['milp', 'full model'],
    },
  ];
}

/** subtract: the pruning curve (removed features vs AUC drop), the per-feature shuffle drops and IVs. */
export function subtractCharts(result: unknown): Chart[] {
  if (!isObj(result)) return [];
  const charts: Chart[] = [];
  const points: ScatterPoint[] = [];
  for (const c of objs(result.curve)) {
    const x = num(c.removed);
    const y = num(c.drop);
    if (x === null || y === null) continue;
    // permutation: the drop estimated by shuffling on the full model; retrain: measured by retraining
    const check = c.check === 'retrain' ? 'retrained' : 'estimated';
    const accepted = c.accepted === true;
    points.push({
      x,
      y,
      low: num(c.ciLow),
      high: num(c.ciHigh),
      series: `${check} · ${accepted ? 'accepted' : 'rejected'}`,
      label: `round ${num(c.round) ?? '?'}`,
    });
  }
  if (points.length) {
    const maxDrop = num(result.maxDrop);
    charts.push({
      kind: 'scatter',
      title: 'Pruning curve',
      xAxis: 'features removed',
      yAxis: 'AUC drop',
      points,
      lines: [],
      xIntegers: true,
      refs:
        maxDrop === null
          ? [{ value: 0, label: '0' }]
          : [
              { value: 0, label: '0' },
              { value: maxDrop, label: 'max drop' },
            ],
    });
  }
  const rows: IntervalRow[] = [];
  for (const f of objs(result.perFeature)) {
    const value = num(f.shuffleDrop);
    if (value === null) continue;
    const ci = list(f.shuffleCi);
    rows.push({
      label: str(f.feature, '?'),
      value,
      low: num(ci[0]),
      high: num(ci[1]),
      group: f.removable === true ? 'remove' : 'keep',
    });
  }
  if (rows.length) {
    charts.push({
      kind: 'interval',
      title: 'AUC drop when a feature is shuffled',
      axis: 'AUC drop',
      rows,
      refs: [{ value: 0, label: '0' }],
    });
  }
  const ivRows: BarRow[] = [];
  for (const f of objs(result.perFeature)) {
    const value = num(f.iv);
    if (value !== null) ivRows.push({ label: str(f.feature, '?'), value, group: f.removable === true ? 'remove' : 'keep' });
  }
  if (ivRows.length)
    charts.push({ kind: 'bars', title: 'Information value per feature', axis: 'IV', rows: ivRows, refs: IV_REFS });
  return charts;
}

/** Siddiqi's conventional reading of IV (the same cut points as the score workflow's `strength`). */
export const IV_REFS = [
  { value: 0.02, label: 'weak' },
  { value: 0.1, label: 'medium' },
  { value: 0.3, label: 'strong' },
];

/** score: every feature's IV, strongest first, coloured by its strength. */
export function scoreCharts(result: unknown): Chart[] {
  if (!isObj(result)) return [];
  const rows: BarRow[] = [];
  for (const r of objs(result.ranking)) {
    const value = num(r.iv);
    if (value === null) continue;
    const psi = num(r.psi);
    rows.push({
      label: str(r.feature, '?'),
      value,
      group: str(r.strength, 'unknown'),
      note: psi === null ? undefined : `PSI ${psi.toPrecision(3)}`,
    });
  }
  if (!rows.length) return [];
  return [{ kind: 'bars', title: 'Information value per feature', axis: 'IV', rows, refs: IV_REFS }];
}

/** A bin as the score workflow stores it (per feature, in the `iv` result's details). */
export interface WoeBin {
  label: string;
  count: number;
  events: number;
  woe: number;
  iv: number;
}

/** The bins of one feature's `iv` result row (`details.bins`), readable or dropped. */
export function woeBins(details: unknown): WoeBin[] {
  if (!isObj(details)) return [];
  const out: WoeBin[] = [];
  for (const b of objs(details.bins)) {
    const woe = num(b.woe);
    const count = num(b.count);
    if (woe === null || count === null) continue;
    const rv = b.range_or_values;
    const label = Array.isArray(rv) ? rv.map(String).join(', ') : str(rv, '?');
    out.push({
      label: label.length > 40 ? `${label.slice(0, 39)}…` : label,
      count,
      events: num(b.events) ?? 0,
      woe,
      iv: num(b.iv) ?? 0,
    });
  }
  return out;
}

/** One feature's WOE per bin: positive (above-average event rate under the stored convention) and negative bars. */
export function woeChart(feature: string, bins: WoeBin[]): BarChart | null {
  if (!bins.length) return null;
  const total = bins.reduce((a, b) => a + b.count, 0) || 1;
  return {
    kind: 'bars',
    title: `WOE per bin of ${feature}`,
    axis: 'WOE',
    rows: bins.map((b) => ({
      label: b.label,
      value: b.woe,
      group: b.woe >= 0 ? 'positive WOE' : 'negative WOE',
      note: `${((100 * b.count) / total).toFixed(1)}% of rows, event rate ${b.count > 0 ? ((100 * b.events) / b.count).toFixed(2) : '0'}%, IV term ${b.iv.toPrecision(3)}`,
    })),
    refs: [{ value: 0, label: '0' }],
  };
}

/** add: each candidate's contribution (and leave-one-in ΔAUC) against 0 and minGain. */
export function addCharts(result: unknown): Chart[] {
  if (!isObj(result)) return [];
  const rows: IntervalRow[] = [];
  for (const c of objs(result.candidates)) {
    const feature = str(c.feature, '?');
    const verdict = str(c.verdict, 'unknown');
    // results that name their split (validation: what the verdict read; test: reported) say it in the label
    const split = (o: unknown) => (isObj(o) && typeof o.split === 'string' ? ` (${o.split})` : '');
    const contribution = interval(c.contribution, 'mean');
    if (contribution) rows.push({ label: `${feature} contribution${split(c.contribution)}`, ...contribution, group: verdict });
    const loi = interval(c.leaveOneIn, 'delta');
    if (loi) rows.push({ label: `${feature} leave-one-in${split(c.leaveOneIn)}`, ...loi, group: verdict });
  }
  if (!rows.length) return [];
  const refs = [{ value: 0, label: '0' }];
  const minGain = num(result.minGain);
  if (minGain !== null && minGain !== 0) refs.push({ value: minGain, label: 'minGain' });
  return [{ kind: 'interval', title: 'ΔAUC per candidate', axis: 'ΔAUC', rows, refs }];
}

/** The charts of an experiment's result by kind; none for kinds without charts or unusable results. */
export function chartsFor(kind: string, result: unknown, costAxis: CostAxis = 'mean'): Chart[] {
  try {
    switch (kind) {
      case 'multiply':
        return multiplyCharts(result);
      case 'divide':
        return divideCharts(result, costAxis);
      case 'subtract':
        return subtractCharts(result);
      case 'add':
        return addCharts(result);
      case 'score':
        return scoreCharts(result);
      default:
        return [];
    }
  } catch {
    return [];
  }
}

/** A linear scale from a domain (padded when empty) onto a pixel range. */
export function linearScale(
  values: number[],
  range: [number, number],
  pad = 0.05,
): { scale: (v: number) => number; domain: [number, number] } {
  const finite = values.filter((v) => Number.isFinite(v));
  let lo = finite.length ? Math.min(...finite) : 0;
  let hi = finite.length ? Math.max(...finite) : 1;
  if (hi === lo) {
    const d = Math.abs(lo) || 1;
    lo -= d * 0.5;
    hi += d * 0.5;
  }
  const span = hi - lo;
  lo -= span * pad;
  hi += span * pad;
  const [r0, r1] = range;
  return { scale: (v: number) => r0 + ((v - lo) / (hi - lo)) * (r1 - r0), domain: [lo, hi] };
}

/** About `count` round tick values across a domain; with `integers`, whole numbers only (step at least 1). */
export function ticks([lo, hi]: [number, number], count = 5, integers = false): number[] {
  if (!(hi > lo)) return [];
  const raw = integers ? Math.max(1, (hi - lo) / count) : (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    out.push(Math.abs(v) < step * 1e-9 ? 0 : Number(v.toPrecision(12)));
  return out;
}

/** A CSS-class-safe token for a group name (verdicts, series). */
export function groupClass(group: string): string {
  return (
    group
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'other'
  );
}

/**
 * A chart row's label in lines of at most `maxChars` characters: broken at spaces, a word longer than
 * a line cut into pieces; one line when it fits.
 */
export function wrapLabel(label: string, maxChars: number): string[] {
  const max = Math.max(4, Math.floor(maxChars));
  const lines: string[] = [];
  let line = '';
  for (const word of label.split(' ').filter((w) => w !== '')) {
    let w = word;
    while (w.length > max) {
      if (line) {
        lines.push(line);
        line = '';
      }
      lines.push(w.slice(0, max));
      w = w.slice(max);
    }
    if (!w) continue;
    if (!line) line = w;
    else if (line.length + 1 + w.length <= max) line += ` ${w}`;
    else {
      lines.push(line);
      line = w;
    }
  }
  if (line || !lines.length) lines.push(line);
  return lines;
}

/** Characters an SVG label may take per line, and the pixels per character assumed (the charts' 11 px font). */
export const LABEL_CHARS = 44;
export const LABEL_CHAR_PX = 6.6;

/**
 * The label column of a chart with row labels: each label's lines and the column's width (the longest
 * line, at most LABEL_CHARS characters, plus a gap), so that no label runs past the chart's left edge.
 */
export function labelColumn(labels: string[]): { lines: string[][]; width: number } {
  const lines = labels.map((l) => wrapLabel(l, LABEL_CHARS));
  const longest = Math.max(6, ...lines.flat().map((s) => s.length));
  return { lines, width: Math.ceil(longest * LABEL_CHAR_PX) + 12 };
}
