import type { Prng } from './prng';
import type { ImpressionTable } from './sim-world.types';
import { DAY_SECONDS } from './world-constants';

/**
 * Planted derived effects (simulateWorld's `derivedEffects`, off by default): click effects that no
 * column carries alone, only an expression over columns and earlier rows does:
 *
 * - `cross`: a table of effects over (d_region, d_slot), two impression columns of 8 and 6 values,
 *   centred so that neither column has a main effect: only cross(d_region, d_slot, …) carries it;
 * - `ratio`: an effect of whether the spend per visit, d_spend / d_visits, is above its median (two
 *   independent log-normal impression columns): a step of log d_spend − log d_visits, which no sum of
 *   an effect of each column makes (a smooth function of the log ratio would be one: log a − log b);
 * - `rate`: the click rate of the (user, item category) pair over the previous 7 days in the line,
 *   smoothed, raises the click probability: a habit, which rate(by: [user_id, i_category], over: 7d)
 *   reads. Clicks are then drawn in time order, each from the rows strictly before its time.
 */
export const DERIVED_EFFECTS = {
  cross: { columns: ['d_region', 'd_slot'], values: [8, 6], effect: 0.7, expression: 'cross(d_region, d_slot, buckets: 1024)' },
  ratio: { columns: ['d_spend', 'd_visits'], sigma: 0.8, effect: 0.5, expression: 'd_spend / d_visits' },
  rate: {
    columns: ['user_id', 'i_category'],
    windowDays: 7,
    /** logit += effect × clamp(s − prior, −0.1, 0.3), s = (clicks + 2 prior) / (rows + 2) of the window */
    effect: 4,
    prior: 0.05,
    expression: 'rate(by: [user_id, i_category], over: 7d)',
  },
} as const;

/** Per-impression columns of the derived effects, written into the samples beside the others. */
export interface DerivedColumns {
  region: Int32Array;
  slot: Int32Array;
  spend: Float64Array;
  visits: Float64Array;
}

export interface DerivedTruth {
  name: 'cross' | 'ratio' | 'rate';
  /** the expression that carries it (text form) */
  expression: string;
  /** the sample columns it reads */
  columns: string[];
  /** standard deviation of its logit term over the rows */
  effect: number;
}

const std = (v: Float64Array): number => {
  let s = 0;
  let q = 0;
  for (const x of v) {
    s += x;
    q += x * x;
  }
  const m = s / v.length;
  return Math.sqrt(Math.max(0, q / v.length - m * m));
};

/** Draws the columns and adds the cross and ratio terms to `logit` (the rate term comes with the clicks). */
export function plantDerived(rng: Prng, imp: ImpressionTable, logit: Float64Array): { columns: DerivedColumns; terms: Float64Array[] } {
  const n = imp.rows;
  const { cross, ratio } = DERIVED_EFFECTS;
  const [va, vb] = cross.values;
  // a normal table, centred on both margins: no main effect of either column, unit spread
  const t: number[][] = Array.from({ length: va }, () => Array.from({ length: vb }, () => rng.normal()));
  const rowMean = t.map((r) => r.reduce((a, x) => a + x, 0) / vb);
  const colMean = Array.from({ length: vb }, (_, j) => t.reduce((a, r) => a + r[j], 0) / va);
  const all = rowMean.reduce((a, x) => a + x, 0) / va;
  let sq = 0;
  for (let i = 0; i < va; i++)
    for (let j = 0; j < vb; j++) {
      t[i][j] = t[i][j] - rowMean[i] - colMean[j] + all;
      sq += t[i][j] ** 2;
    }
  const scale = 1 / Math.sqrt(sq / (va * vb));
  const columns: DerivedColumns = {
    region: new Int32Array(n),
    slot: new Int32Array(n),
    spend: new Float64Array(n),
    visits: new Float64Array(n),
  };
  const crossTerm = new Float64Array(n);
  const ratioTerm = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    const a = rng.int(va);
    const b = rng.int(vb);
    const ls = ratio.sigma * rng.normal();
    const lv = ratio.sigma * rng.normal();
    columns.region[r] = a;
    columns.slot[r] = b;
    columns.spend[r] = Math.round(100 * Math.exp(ls + 3)) / 100;
    columns.visits[r] = Math.round(100 * Math.exp(lv + 1)) / 100;
    crossTerm[r] = cross.effect * scale * t[a][b];
    ratioTerm[r] = ratio.effect * Math.sign(Math.log(columns.spend[r] / columns.visits[r]) - 2);
    logit[r] += crossTerm[r] + ratioTerm[r];
  }
  return { columns, terms: [crossTerm, ratioTerm] };
}

/**
 * Draws the clicks in time order with the habit effect: each row's logit gains the smoothed click rate
 * of its (line, user, item category) over the window before its time (rows of its own time excluded,
 * as they are drawn together). The term is added to `logit` (the true logit). Returns the term.
 */
export function drawClicksWithHabit(rng: Prng, imp: ImpressionTable, logit: Float64Array, itemCategory: Int32Array, categories: number): Float64Array {
  const { rate } = DERIVED_EFFECTS;
  const n = imp.rows;
  const window = rate.windowDays * DAY_SECONDS;
  const term = new Float64Array(n);
  // per key: the window's rows as a queue of (ts, click), and its clicks
  const state = new Map<number, { ts: number[]; click: number[]; head: number; clicks: number }>();
  const keyOf = (r: number) => (imp.domainIndex[r] * 1e7 + imp.userId[r]) * categories + itemCategory[imp.itemId[r]];
  for (let r0 = 0; r0 < n; ) {
    let r1 = r0;
    while (r1 < n && imp.ts[r1] === imp.ts[r0]) r1++;
    const t = imp.ts[r0];
    for (let r = r0; r < r1; r++) {
      const q = state.get(keyOf(r));
      let s = rate.prior;
      if (q) {
        while (q.head < q.ts.length && q.ts[q.head] < t - window) q.clicks -= q.click[q.head++];
        const rows = q.ts.length - q.head;
        s = (q.clicks + 2 * rate.prior) / (rows + 2);
      }
      term[r] = rate.effect * Math.min(0.3, Math.max(-0.1, s - rate.prior));
      logit[r] += term[r];
      imp.click[r] = rng.next() < 1 / (1 + Math.exp(-logit[r])) ? 1 : 0;
    }
    for (let r = r0; r < r1; r++) {
      const k = keyOf(r);
      let q = state.get(k);
      if (!q) state.set(k, (q = { ts: [], click: [], head: 0, clicks: 0 }));
      q.ts.push(t);
      q.click.push(imp.click[r]);
      q.clicks += imp.click[r];
      if (q.head > 64 && q.head * 2 > q.ts.length) {
        q.ts = q.ts.slice(q.head);
        q.click = q.click.slice(q.head);
        q.head = 0;
      }
    }
    r0 = r1;
  }
  return term;
}

export function derivedTruth(terms: { cross: Float64Array; ratio: Float64Array; rate: Float64Array }): DerivedTruth[] {
  const round = (x: number) => Math.round(x * 1e4) / 1e4;
  return (['cross', 'ratio', 'rate'] as const).map((name) => ({
    name,
    expression: DERIVED_EFFECTS[name].expression,
    columns: [...DERIVED_EFFECTS[name].columns],
    effect: round(std(terms[name])),
  }));
}
