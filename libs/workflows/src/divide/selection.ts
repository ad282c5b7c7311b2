import highsLoader from 'highs';
import { RESOURCES, type Costs } from './divide-experiment.schema';

export interface SelectionProblem {
  /** features in a fixed order */
  features: string[];
  /** value of each feature (≥ 0: negative values are clipped) */
  values: Record<string, number>;
  costs: Record<string, Costs>;
  /** absolute budget per resource */
  budget: Costs;
  /** features that are kept or dropped together */
  groups: string[][];
}

export interface Selection {
  selected: string[];
  value: number;
  cost: Costs;
}

export interface MilpSelection extends Selection {
  status: string;
  /** relative MIP gap HiGHS reports (0 = proven optimal) */
  gap: number;
}

/** Units the selection decides on: each group as one, every other feature alone. */
function units(p: SelectionProblem): string[][] {
  const grouped = new Set(p.groups.flat());
  return [...p.groups, ...p.features.filter((f) => !grouped.has(f)).map((f) => [f])];
}

export function costOf(features: string[], costs: Record<string, Costs>): Costs {
  const out: Costs = { storage: 0, communication: 0, compute: 0 };
  for (const f of features) for (const r of RESOURCES) out[r] += costs[f][r];
  return out;
}

const valueOf = (features: string[], values: Record<string, number>) => features.reduce((s, f) => s + Math.max(0, values[f]), 0);

export function fits(cost: Costs, budget: Costs): boolean {
  // a relative tolerance: costs are sums of floats
  return RESOURCES.every((r) => cost[r] <= budget[r] * (1 + 1e-9) + 1e-12);
}

/**
 * The integer program: maximise the summed value of the selected features subject to every resource
 * budget, a group's features all in or all out; written in CPLEX LP format for HiGHS.
 */
export function milpText(p: SelectionProblem): { lp: string; vars: Map<string, string[]> } {
  const us = units(p);
  const vars = new Map<string, string[]>();
  us.forEach((u, i) => vars.set(`x${i}`, u));
  // values in units of 1e-4 AUC: coefficients of order 1 keep the solver's tolerances meaningful
  const num = (x: number) => (Number.isFinite(x) ? x.toPrecision(12) : '0');
  const terms = (coef: (u: string[]) => number) =>
    [...vars.entries()]
      .map(([v, u]) => [v, coef(u)] as const)
      .filter(([, c]) => c !== 0)
      .map(([v, c]) => `${c < 0 ? '-' : '+'} ${num(Math.abs(c))} ${v}`)
      .join(' ');
  const obj = terms((u) => valueOf(u, p.values) * 1e4) || `+ 0 x0`;
  const rows = RESOURCES.map((r) => {
    const t = terms((u) => costOf(u, p.costs)[r]);
    return t ? ` ${r}: ${t} <= ${num(p.budget[r])}` : null;
  }).filter((x): x is string => x !== null);
  return {
    lp: `Maximize\n obj: ${obj}\nSubject To\n${rows.length ? rows.join('\n') : ' none: + 0 x0 <= 1'}\nBinary\n ${[...vars.keys()].join(' ')}\nEnd\n`,
    vars,
  };
}

let highs: Awaited<ReturnType<typeof highsLoader>> | null = null;

/** Solves the selection with HiGHS (MILP); the status and relative gap are what the solver reports. */
export async function solveMilp(p: SelectionProblem): Promise<MilpSelection> {
  highs ??= await highsLoader();
  const { lp, vars } = milpText(p);
  const options = { mip_rel_gap: 1e-9, time_limit: 60 };
  const r = highs.solve(lp, options);
  if (r.Status !== 'Optimal' && r.Status !== 'Time limit reached') {
    throw new Error(`the MILP solver found no selection (status: ${r.Status})`);
  }
  const gap = highs.withModel({ format: 'lp', data: lp }, (m) => {
    for (const [k, v] of Object.entries(options)) m.options.set(k, v);
    m.run();
    return Number(m.info.get('mip_gap'));
  });
  const selected: string[] = [];
  for (const [v, u] of vars) {
    const col = (r.Columns as Record<string, { Primal: number }>)[v];
    if (col && col.Primal > 0.5) selected.push(...u);
  }
  const order = new Map(p.features.map((f, i) => [f, i]));
  selected.sort((a, b) => order.get(a)! - order.get(b)!);
  return { selected, value: valueOf(selected, p.values), cost: costOf(selected, p.costs), status: r.Status, gap };
}

/**
 * The baseline: units by value per unit of cost (each resource's cost as a share of its budget,
 * summed), added while every budget holds.
 */
export function greedySelect(p: SelectionProblem): Selection {
  const us = units(p);
  const density = (u: string[]) => {
    const c = costOf(u, p.costs);
    const share = RESOURCES.reduce((s, r) => s + (p.budget[r] > 0 ? c[r] / p.budget[r] : c[r] > 0 ? Infinity : 0), 0);
    const v = valueOf(u, p.values);
    return share === 0 ? (v > 0 ? Infinity : 0) : v / share;
  };
  const ranked = us.map((u, i) => ({ u, i, d: density(u) })).sort((a, b) => b.d - a.d || a.i - b.i);
  const selected: string[] = [];
  for (const { u } of ranked) {
    if (fits(costOf([...selected, ...u], p.costs), p.budget)) selected.push(...u);
  }
  const order = new Map(p.features.map((f, i) => [f, i]));
  selected.sort((a, b) => order.get(a)! - order.get(b)!);
  return { selected, value: valueOf(selected, p.values), cost: costOf(selected, p.costs) };
}

/** Pairs whose joint permutation loss exceeds the sum of their own, merged into groups (connected pairs join). */
export function interactionGroups(
  pairs: { a: string; b: string; jointCiLow: number }[],
  values: Record<string, number>,
): string[][] {
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    const p = parent.get(x) ?? x;
    if (p === x) return x;
    const r = find(p);
    parent.set(x, r);
    return r;
  };
  for (const { a, b, jointCiLow } of pairs) {
    if (jointCiLow > Math.max(0, values[a]) + Math.max(0, values[b])) parent.set(find(a), find(b));
  }
  const groups = new Map<string, string[]>();
  for (const f of new Set(pairs.flatMap((p) => [p.a, p.b]))) {
    const r = find(f);
    groups.set(r, [...(groups.get(r) ?? []), f]);
  }
  return [...groups.values()].filter((g) => g.length > 1);
}
