import type { CostMeasurement, FeatureCostsRecord, FeatureEntityLevel, FeatureKind } from '@abacus/data';

/**
 * The pure rules of the cost ledger: bytes per value by kind, the entity level and its fan-out, the
 * compute share of a forward pass, and how declared and measured figures combine.
 */

/** Candidates scored per request when neither the model's architecture nor the caller says otherwise. */
export const DEFAULT_CANDIDATES_PER_REQUEST = 100;

/** Bytes of one numeric value as served: a float32 (the runtime's input type), whatever the stored width. */
export const NUMERIC_BYTES = 4;
/** Bytes of one id (integer-coded categorical value, or one element of a multi-id list): an int32. */
export const ID_BYTES = 4;
/** Bytes of the length prefix of a multi-id list. */
export const LIST_OVERHEAD_BYTES = 4;

export type CostResource = 'storage' | 'communication' | 'compute';
export const COST_RESOURCES: CostResource[] = ['storage', 'communication', 'compute'];

export const COST_UNITS: Record<CostResource, string> = {
  storage: 'bytes/entity',
  communication: 'bytes/request',
  compute: 'share of one prediction',
};

/** What the storage measurement read from a column. */
export interface ColumnStats {
  /** rows read (non-null and null) */
  rows: number;
  /** rows with a value */
  nonNull: number;
  /** text columns: mean UTF-8 length of the values (bytes) */
  meanTextBytes?: number;
  /** multi-id columns: mean list length */
  meanListLength?: number;
  /** approximate number of distinct values (ids for lists) */
  distinct?: number;
}

/** Whether a stored type is text (its values are stored as their UTF-8 bytes). */
export const isTextType = (sourceType: string): boolean => /^(VARCHAR|TEXT|STRING|CHAR|BPCHAR)/i.test(sourceType.trim());

/**
 * Mean encoded bytes of one value: numeric 4 (float32); categorical 4 for an integer id, the mean UTF-8
 * length for text; multi-id 4 per id times the mean list length, plus a 4-byte length prefix.
 */
export function bytesPerValue(kind: FeatureKind, sourceType: string, stats: ColumnStats): number {
  if (kind === 'numeric') return NUMERIC_BYTES;
  if (kind === 'categorical') return isTextType(sourceType) ? (stats.meanTextBytes ?? 0) : ID_BYTES;
  return LIST_OVERHEAD_BYTES + ID_BYTES * (stats.meanListLength ?? 0);
}

/**
 * The entity level of a feature: the declared `costs.entity` when set; else from the entity key of its
 * feature table: a key naming an item (item_id, sku, product, goods, ad, doc) is per candidate, a key
 * naming a user, context, request or session is per request; a feature with no entity key (a column of
 * the sample set) or an unrecognised key is `null` (unknown, counted once per request).
 */
export function entityLevel(entityKey: string | null, declared?: FeatureEntityLevel): FeatureEntityLevel | null {
  if (declared) return declared;
  if (!entityKey) return null;
  const k = entityKey.toLowerCase();
  if (/(^|_)(item|items|sku|product|goods|ad|ads|doc|candidate)(_|$|id)/.test(k)) return 'item';
  if (/(^|_)(user|users|member|account|uid)(_|$|id)/.test(k)) return 'user';
  if (/(^|_)(context|contexts|request|session|query|page)(_|$|id)/.test(k)) return 'context';
  return null;
}

/** Times a feature's values are fetched per request: once per candidate for items, once otherwise. */
export function fanOut(level: FeatureEntityLevel | null, candidatesPerRequest: number): number {
  return level === 'item' ? candidatesPerRequest : 1;
}

/** Best (minimum) of the repeats and their relative spread (max - min) / min. */
export function bestOf(times: number[]): { best: number; spread: number } {
  if (!times.length) throw new Error('no timings');
  const best = Math.min(...times);
  const worst = Math.max(...times);
  return { best, spread: best > 0 ? (worst - best) / best : 0 };
}

/**
 * The median of `xs` and a distribution-free interval around it from order statistics: the k-th
 * smallest and k-th largest value, k the largest whose two-sided binomial tail keeps the coverage at
 * least 95 % (n = 9: the 2nd and 8th, 96.1 %); with too few values for that, the smallest and largest
 * (n = 5: 93.8 %). `coverage` is the interval's exact probability of holding the median.
 */
export function medianInterval(xs: number[]): { median: number; low: number; high: number; coverage: number } {
  if (!xs.length) throw new Error('no values');
  const v = [...xs].sort((a, b) => a - b);
  const n = v.length;
  const median = n % 2 ? v[(n - 1) / 2]! : (v[n / 2 - 1]! + v[n / 2]!) / 2;
  // P(Binomial(n, 1/2) <= j) for j = 0..n
  const cdf: number[] = [];
  let c = 1;
  let acc = 0;
  for (let j = 0; j <= n; j++) {
    if (j > 0) c = (c * (n - j + 1)) / j;
    acc += c / 2 ** n;
    cdf.push(acc);
  }
  let k = 1;
  while (k + 1 <= Math.floor((n + 1) / 2) && 1 - 2 * cdf[k]! >= 0.95) k++;
  return { median, low: v[k - 1]!, high: v[n - k]!, coverage: 1 - 2 * cdf[k - 1]! };
}

/** What a compute measurement reports for one input (see `pairedShare`). */
export interface PairedShare {
  /** the share in force: the median, or 0 when below resolution */
  share: number;
  median: number;
  ciLow: number;
  ciHigh: number;
  coverage: number;
  /** the smallest share this measurement can tell from zero (the A/A noise floor) */
  resolution: number;
  belowResolution: boolean;
}

/**
 * One input's share of a prediction from rounds of paired timings: per round the relative difference
 * (t_all - t_without) / t_all of two forwards timed side by side (drift in the machine's load falls on
 * both), its median and interval over the rounds. The resolution is the noise floor of the same
 * machine in the same measurement: the same interval for pairs of two timings of the same full model
 * (A/A pairs, one a round), the farther of its ends from 0 — how far a median of pure noise strays. A
 * share whose median is under the resolution, or whose interval reaches 0, is below resolution and
 * counts as 0.
 */
export function pairedShare(all: number[], without: number[], aa: [number, number][]): PairedShare {
  if (!all.length || all.length !== without.length) throw new Error('paired timings: need as many with as without');
  const d = all.map((a, r) => (a > 0 ? (a - without[r]!) / a : 0));
  const { median, low, high, coverage } = medianInterval(d);
  let resolution = 0;
  if (aa.length) {
    const e = medianInterval(aa.map(([x, y]) => (x > 0 ? (x - y) / x : 0)));
    resolution = Math.max(Math.abs(e.low), Math.abs(e.high));
  }
  const belowResolution = median <= resolution || low <= 0;
  return {
    share: belowResolution ? 0 : Math.min(1, median),
    median,
    ciLow: low,
    ciHigh: high,
    coverage,
    resolution,
    belowResolution,
  };
}

/** Spearman's rank correlation of two equally long lists (tied values share their mean rank). */
export function spearman(a: number[], b: number[]): number {
  if (a.length !== b.length || a.length < 2) throw new Error('spearman: two lists of the same length, at least 2');
  const ranks = (xs: number[]) => {
    const idx = xs.map((x, i) => [x, i] as const).sort((p, q) => p[0] - q[0]);
    const r = new Array<number>(xs.length);
    for (let i = 0; i < idx.length;) {
      let j = i;
      while (j + 1 < idx.length && idx[j + 1]![0] === idx[i]![0]) j++;
      for (let k = i; k <= j; k++) r[idx[k]![1]] = (i + j) / 2 + 1;
      i = j + 1;
    }
    return r;
  };
  const ra = ranks(a);
  const rb = ranks(b);
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const ma = mean(ra);
  const mb = mean(rb);
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < ra.length; i++) {
    num += (ra[i]! - ma) * (rb[i]! - mb);
    da += (ra[i]! - ma) ** 2;
    db += (rb[i]! - mb) ** 2;
  }
  return da > 0 && db > 0 ? num / Math.sqrt(da * db) : da === db ? 1 : 0;
}

/** Share of one prediction that a feature costs: (t_all - t_without) / t_all, clipped to [0, 1]. */
export function computeShare(tAll: number, tWithout: number): number {
  if (!(tAll > 0) || !Number.isFinite(tWithout)) return 0;
  return Math.min(1, Math.max(0, (tAll - tWithout) / tAll));
}

/** One resource of a feature in the ledger: the figure in force and both sources it may come from. */
export interface LedgerFigure {
  value: number | null;
  unit: string;
  /** which source the value comes from; null: no figure at all */
  source: 'measured' | 'declared' | null;
  /** when the value in force was measured (or declared) */
  measuredAt: string | null;
  how: string | null;
  declared: number | null;
  measured: CostMeasurement | null;
}

export interface LedgerEntry {
  id: string;
  name: string;
  businessLine: string;
  kind: FeatureKind;
  entityKey: string | null;
  entity: FeatureEntityLevel | null;
  storage: LedgerFigure;
  communication: LedgerFigure;
  compute: LedgerFigure;
  /** true when no resource has any figure */
  noCost: boolean;
}

const DECLARED_FIELD: Record<CostResource, 'storageBytesPerEntity' | 'fetchBytesPerRequest' | 'computeCost'> = {
  storage: 'storageBytesPerEntity',
  communication: 'fetchBytesPerRequest',
  compute: 'computeCost',
};

/**
 * The figure in force for one resource: a declared value overrides a measured one; both are kept. The
 * legacy figures with `source: 'measured'` (written before measurements were kept apart) count as
 * measured, with no date.
 */
export function ledgerFigure(costs: FeatureCostsRecord, resource: CostResource, derived?: CostMeasurement | null): LedgerFigure {
  const raw = costs[DECLARED_FIELD[resource]];
  const legacyMeasured = costs.source === 'measured' && raw !== undefined;
  const declared = raw !== undefined && !legacyMeasured ? raw : null;
  const measured: CostMeasurement | null =
    derived ??
    costs.measured?.[resource] ??
    (legacyMeasured ? { value: raw, measuredAt: '', how: 'stored as measured (no measurement record)' } : null);
  const unit = COST_UNITS[resource];
  if (declared !== null) {
    return {
      value: declared,
      unit,
      source: 'declared',
      measuredAt: costs.declaredAt ?? null,
      how: 'declared in the registry',
      declared,
      measured,
    };
  }
  if (measured) {
    return {
      value: measured.value,
      unit,
      source: 'measured',
      measuredAt: measured.measuredAt || null,
      how: measured.how,
      declared,
      measured,
    };
  }
  return { value: null, unit, source: null, measuredAt: null, how: null, declared: null, measured: null };
}

/**
 * Measured communication, derived from measured storage: storage × fan-out, with the fan-out of the
 * feature's entity level at the given candidates per request.
 */
export function measuredCommunication(
  storage: CostMeasurement,
  level: FeatureEntityLevel | null,
  candidatesPerRequest: number,
): CostMeasurement {
  const n = fanOut(level, candidatesPerRequest);
  const why =
    level === 'item'
      ? `item feature, ${candidatesPerRequest} candidates per request`
      : level
        ? `${level} feature, once per request`
        : 'entity level unknown, counted once per request';
  return {
    value: storage.value * n,
    measuredAt: storage.measuredAt,
    how: `storage ${round(storage.value)} bytes × fan-out ${n} (${why})`,
    fanOut: n,
  };
}

const round = (x: number) => Math.round(x * 100) / 100;

export function ledgerEntry(
  f: { id: string; name: string; businessLine: string; kind: FeatureKind; entityKey: string | null; costs: FeatureCostsRecord },
  candidatesPerRequest = DEFAULT_CANDIDATES_PER_REQUEST,
): LedgerEntry {
  const costs = f.costs ?? {};
  const level = entityLevel(f.entityKey, costs.entity);
  const m = costs.measured?.storage;
  const storage = ledgerFigure(costs, 'storage');
  const communication = ledgerFigure(costs, 'communication', m ? measuredCommunication(m, level, candidatesPerRequest) : null);
  const compute = ledgerFigure(costs, 'compute');
  return {
    id: f.id,
    name: f.name,
    businessLine: f.businessLine,
    kind: f.kind,
    entityKey: f.entityKey,
    entity: level,
    storage,
    communication,
    compute,
    noCost: storage.source === null && communication.source === null && compute.source === null,
  };
}

/** What every input of a model costs a forward, in the fitted cost model's terms (see `fitComputeModel`). */
export const COMPUTE_UNITS = ['numeric', 'slot', 'lookup', 'cache'] as const;
export type ComputeUnit = (typeof COMPUTE_UNITS)[number];

/**
 * The structure of one input that its compute follows in the runtime's forward: a numeric input is
 * one column of the first layer; a slot adds a pooled embedding (its columns of the first layer and a
 * pooling step), one lookup per id of the row, and lookups that miss the cache more as its table grows
 * (ids per row × log2 of the vocabulary, scaled to a 2^20 table = 1).
 */
export function computeUnits(i: { kind: FeatureKind; vocab?: number; listLength?: number }): Record<ComputeUnit, number> {
  if (i.kind === 'numeric') return { numeric: 1, slot: 0, lookup: 0, cache: 0 };
  const len = i.kind === 'multi_id' ? Math.max(1, Math.round(i.listLength ?? 1)) : 1;
  const vocab = Math.max(2, i.vocab ?? 1000);
  return { numeric: 0, slot: 1, lookup: len, cache: (len * Math.log2(vocab)) / 20 };
}

/** One timed model of a subset of the inputs: its forward time relative to the full model's, timed beside it. */
export interface ComputeDesign {
  /** indices of the inputs the model has */
  members: number[];
  /** median over the rounds of t(subset) / t(all inputs) */
  ratio: number;
}

/** A term of the fitted cost model: a unit, or `input` (numeric and slot together: every input the same) */
export type ComputeTerm = ComputeUnit | 'input';

export interface FittedCompute {
  /** fitted cost of one unit of each kind, as a share of the full model's forward (0: not in the fit) */
  coef: Record<ComputeUnit, number>;
  /**
   * the terms the fit could tell apart on these inputs (the others are folded into them); `input` in
   * place of numeric and slot when the timings could not tell a slot's cost from a numeric column's
   */
  fitted: ComputeTerm[];
  /** share of the intercept: what a model costs with no inputs (the MLP above the first layer, the output) */
  intercept: number;
  /** R² of the fit over the designs */
  r2: number;
  /** per input: the fitted share, its 95 % bootstrap interval over the designs */
  perInput: { share: number; ciLow: number; ciHigh: number }[];
  /** the median half-width of the inputs' intervals: a share under it cannot be told from zero */
  resolution: number;
}

/** Solves the least-squares problem ‖Xb - y‖ by its normal equations (Gaussian elimination, partial pivoting). */
function leastSquares(x: number[][], y: number[]): number[] | null {
  const k = x[0]?.length ?? 0;
  const a = Array.from({ length: k }, () => new Array<number>(k + 1).fill(0));
  for (let r = 0; r < x.length; r++) {
    for (let i = 0; i < k; i++) {
      for (let j = 0; j < k; j++) a[i]![j]! += x[r]![i]! * x[r]![j]!;
      a[i]![k]! += x[r]![i]! * y[r]!;
    }
  }
  for (let c = 0; c < k; c++) {
    let p = c;
    for (let r = c + 1; r < k; r++) if (Math.abs(a[r]![c]!) > Math.abs(a[p]![c]!)) p = r;
    if (Math.abs(a[p]![c]!) < 1e-12) return null;
    [a[c], a[p]] = [a[p]!, a[c]!];
    for (let r = 0; r < k; r++) {
      if (r === c) continue;
      const f = a[r]![c]! / a[c]![c]!;
      for (let j = c; j <= k; j++) a[r]![j]! -= f * a[c]![j]!;
    }
  }
  return a.map((row, i) => row[k]! / row[i]!);
}

/**
 * The units that are not linear combinations of earlier ones over these inputs (Gram-Schmidt on the
 * inputs' unit columns): with no multi-id input, lookups are one per slot and fold into the slot's
 * cost; with one vocabulary size, the cache term does too.
 */
function independentUnits(units: Record<ComputeUnit, number>[]): ComputeUnit[] {
  const basis: number[][] = [];
  const kept: ComputeUnit[] = [];
  for (const u of COMPUTE_UNITS) {
    let v = units.map((x) => x[u]);
    const norm0 = Math.hypot(...v);
    if (norm0 === 0) continue;
    for (const b of basis) {
      const d = v.reduce((s, x, i) => s + x * b[i]!, 0);
      v = v.map((x, i) => x - d * b[i]!);
    }
    const norm = Math.hypot(...v);
    if (norm / norm0 < 1e-6) continue;
    basis.push(v.map((x) => x / norm));
    kept.push(u);
  }
  return kept;
}

/**
 * The compute cost model fitted to timed subset models: t(S) / t(all) = intercept + Σ_{i∈S} Σ_u c_u ·
 * units_u(i), by least squares over the designs; an input's share is Σ_u c_u · units_u(i). Every timing
 * informs every unit's cost, so a share rests on all the designs, not on one pair of timings. The
 * interval is the 2.5th-97.5th percentile of the share over `boot` refits on designs drawn with
 * replacement (seeded).
 */
export function fitComputeModel(
  units: Record<ComputeUnit, number>[],
  designs: ComputeDesign[],
  o: { boot?: number; seed?: number } = {},
): FittedCompute {
  const pct = (xs: number[], q: number) => {
    const v = [...xs].sort((p, r) => p - r);
    return v.length ? v[Math.min(v.length - 1, Math.max(0, Math.round(q * (v.length - 1))))]! : NaN;
  };
  const val = (i: number, t: ComputeTerm) => (t === 'input' ? units[i]!.numeric + units[i]!.slot : units[i]![t]);
  const fitWith = (fitted: ComputeTerm[]) => {
    const row = (d: ComputeDesign) => [1, ...fitted.map((u) => d.members.reduce((s, i) => s + val(i, u), 0))];
    const solve = (ds: ComputeDesign[]) =>
      leastSquares(
        ds.map(row),
        ds.map((d) => d.ratio),
      );
    const b = solve(designs);
    if (!b) throw new Error('the cost model cannot be fitted: the timed designs do not separate the inputs');
    let state = (o.seed ?? 1) >>> 0;
    const rand = () => {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const boots: number[][] = [];
    for (let k = 0; k < (o.boot ?? 400); k++) {
      const beta = solve(designs.map(() => designs[Math.floor(rand() * designs.length)]!));
      if (beta) boots.push(beta);
    }
    return { fitted, row, b, boots };
  };
  // the lookup and cache terms stay only where the timings tell them from zero (their bootstrap
  // interval excludes 0); otherwise they fold into the slot's cost, and the fit is made again
  // a cost term stays only where the timings show it above zero (a term below zero is noise fitted: a
  // lookup cannot save time); a difference of two costs only where its 99 % interval excludes zero
  const notPositive = (draws: number[]) => pct(draws, 0.025) <= 0;
  // (at 99 %: two measurements of a model whose inputs cost alike should both say so, not one in ten split them)
  const unresolved = (draws: number[]) => pct(draws, 0.005) <= 0 && pct(draws, 0.995) >= 0;
  let fit = fitWith(independentUnits(units));
  for (;;) {
    // the finest term first: cache, then lookup, then a slot's difference from a numeric column; a term
    // the timings cannot tell from zero goes, and the fit is made again and looked at again
    const k = (u: ComputeTerm) => fit.fitted.indexOf(u);
    const kc = k('cache');
    const kl = k('lookup');
    const kn = k('numeric');
    const ks = k('slot');
    if (kc >= 0 && notPositive(fit.boots.map((beta) => beta[kc + 1]!))) fit = fitWith(fit.fitted.filter((x) => x !== 'cache'));
    else if (kl >= 0 && notPositive(fit.boots.map((beta) => beta[kl + 1]!)))
      fit = fitWith(fit.fitted.filter((x) => x !== 'lookup'));
    // a slot and a numeric column the timings cannot tell apart (the interval of the difference of their
    // costs reaches 0) cost the same: one term for every input, so noise does not rank them
    else if (kn >= 0 && ks >= 0 && unresolved(fit.boots.map((beta) => beta[ks + 1]! - beta[kn + 1]!)))
      fit = fitWith(['input', ...fit.fitted.filter((x) => x !== 'numeric' && x !== 'slot')]);
    else break;
  }
  const { fitted, row, b, boots } = fit;
  const shareOf = (beta: number[], i: number) => fitted.reduce((s, u, k) => s + beta[k + 1]! * val(i, u), 0);
  const yMean = designs.reduce((s, d) => s + d.ratio, 0) / designs.length;
  const ssTot = designs.reduce((s, d) => s + (d.ratio - yMean) ** 2, 0);
  const ssRes = designs.reduce((s, d) => s + (d.ratio - row(d).reduce((t, x, k) => t + x * b[k]!, 0)) ** 2, 0);
  const draws: number[][] = units.map((_, i) => boots.map((beta) => shareOf(beta, i)));
  const perInput = units.map((_, i) => ({ share: shareOf(b, i), ciLow: pct(draws[i]!, 0.025), ciHigh: pct(draws[i]!, 0.975) }));
  const halfWidths = perInput.map((p) => (p.ciHigh - p.ciLow) / 2).sort((p, r) => p - r);
  const coefOf = (u: ComputeTerm) => (fitted.includes(u) ? b[fitted.indexOf(u) + 1]! : 0);
  const coef = Object.fromEntries(
    COMPUTE_UNITS.map((u) => [u, u === 'numeric' || u === 'slot' ? coefOf(u) + coefOf('input') : coefOf(u)]),
  ) as Record<ComputeUnit, number>;
  return {
    coef,
    fitted,
    intercept: b[0]!,
    r2: ssTot > 0 ? 1 - ssRes / ssTot : 1,
    perInput,
    resolution: halfWidths[(halfWidths.length - 1) >> 1] ?? 0,
  };
}
