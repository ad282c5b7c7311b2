import { createHash } from 'node:crypto';
import { exprToText, type ColumnClass, type ExprKind, type FeatureExpr, type WindowAgg } from '@abacus/samples';

/** What the enumeration knows of a raw column of the set. */
export interface ColumnProfile {
  name: string;
  cls: ColumnClass;
  /** distinct values (approximate) */
  distinct: number;
  /** smallest value of a number (null: not a number) */
  min: number | null;
  /** an entity key of the set (user_id, item_id, …): aggregates are taken per key */
  key: boolean;
  /** a feature of the model joined from a feature table, named `@feature` here and read as `ref` */
  ref?: boolean;
}

export type CandidateFamily =
  | 'column'
  | 'log'
  | 'ratio'
  | 'product'
  | 'difference'
  | 'cross'
  | 'count'
  | 'rate'
  | 'mean'
  | 'sum'
  | 'distinct'
  | 'since'
  | 'freq';

/** One proposed feature: an expression over the set's columns, its model's feature-table features and earlier rows. */
export interface Candidate {
  /** a registry name derived from the expression */
  name: string;
  expr: FeatureExpr;
  text: string;
  family: CandidateFamily;
  kind: ExprKind;
  /** raw columns it reads (@name: a feature-table feature) */
  columns: string[];
}

export interface EnumerateOptions {
  /** window lengths of the aggregates */
  windows: string[];
  /** candidates at most (families taken in turn, so each is represented) */
  maxCandidates: number;
  /** a cross's two columns may have at most this many value pairs */
  maxCrossValues: number;
  /** categoricals with more values than this are keys only (never crossed, never a partition of a pair) */
  maxCategoryValues: number;
  /** numbers aggregated per key at most (the first by name) */
  maxMeasures: number;
  /** the families proposed (default: all) */
  families?: CandidateFamily[];
}

export const DEFAULT_ENUMERATE: EnumerateOptions = {
  windows: ['1d', '7d', '30d'],
  maxCandidates: 2000,
  maxCrossValues: 1_000_000,
  maxCategoryValues: 1000,
  maxMeasures: 8,
};

const safe = (s: string) => s.replace(/[^A-Za-z0-9_]/g, '_');

/** A registry name for an expression: readable, at most 120 characters, unique per expression. */
export function candidateName(family: CandidateFamily, parts: string[]): string {
  const raw = [family, ...parts.map(safe)].join('__');
  if (raw.length <= 120 && /^[A-Za-z0-9]/.test(raw)) return raw;
  const h = createHash('sha256').update(JSON.stringify([family, ...parts])).digest('hex').slice(0, 10);
  return `${raw.slice(0, 100)}__${h}`;
}

const isNumber = (c: ColumnProfile) => c.cls === 'float' || (c.cls === 'integer' && !c.key);
const isCategory = (c: ColumnProfile) => c.cls === 'string' || (c.cls === 'integer' && (c.key || c.distinct <= 64));

/**
 * The candidate expressions over a set's columns: unused raw columns, log of non-negative numbers,
 * ratios, products and differences of number pairs, hashed crosses of category pairs, and, where the
 * set has a time, per entity key (and key × category) counts, click rates and means over each window,
 * per key sums and distinct counts, times since the key's last row and value frequencies. `used`: raw columns the base
 * model already reads as they are (not proposed again as plain columns).
 */
export function enumerateCandidates(
  columns: ColumnProfile[],
  used: Set<string>,
  hasTime: boolean,
  /** the set's rows: a key with about one row per value (an impression id) has no history to aggregate */
  rows: number,
  options: Partial<EnumerateOptions> = {},
): Candidate[] {
  const o = { ...DEFAULT_ENUMERATE, ...options };
  // by name (a feature-table feature, @name, by its own name)
  const bare = (c: ColumnProfile) => c.name.replace(/^@/, '');
  const sorted = [...columns].sort((a, b) => (bare(a) < bare(b) ? -1 : bare(a) > bare(b) ? 1 : a.name < b.name ? -1 : 1));
  // a feature-table feature is read by reference (its value as of the impression)
  const refs = new Set(columns.filter((c) => c.ref).map((c) => c.name));
  const col = (name: string): FeatureExpr => (refs.has(name) ? { ref: name.replace(/^@/, '') } : { col: name });
  const numbers = sorted.filter(isNumber);
  const categories = sorted.filter((c) => isCategory(c) && !c.key && c.distinct >= 2 && c.distinct <= o.maxCategoryValues);
  const keys = sorted.filter(
    (c) => c.key && c.cls !== 'float' && c.cls !== 'list' && c.cls !== 'unsupported' && c.distinct >= 2 && c.distinct <= rows / 2,
  );
  const families = new Map<CandidateFamily, Candidate[]>();
  const seen = new Set<string>();
  const wanted = o.families ? new Set(o.families) : null;
  const push = (family: CandidateFamily, expr: FeatureExpr, kind: ExprKind, cols: string[], parts: string[]) => {
    if (wanted && !wanted.has(family)) return;
    const text = exprToText(expr);
    if (seen.has(text)) return;
    seen.add(text);
    const list = families.get(family) ?? [];
    list.push({ name: candidateName(family, parts), expr, text, family, kind, columns: [...new Set(cols)].sort() });
    families.set(family, list);
  };

  for (const c of sorted) {
    if (used.has(c.name) || c.key || c.ref) continue;
    if (isNumber(c)) push('column', col(c.name), 'numeric', [c.name], [c.name]);
    else if (c.cls === 'string' && c.distinct <= o.maxCategoryValues * 100) push('column', col(c.name), 'categorical', [c.name], [c.name]);
  }
  for (const c of numbers) if (c.min !== null && c.min >= 0) push('log', { op: 'log', arg: col(c.name) }, 'numeric', [c.name], [c.name]);
  for (let i = 0; i < numbers.length; i++)
    for (let j = i + 1; j < numbers.length; j++) {
      const [a, b] = [numbers[i].name, numbers[j].name];
      push('ratio', { op: 'div', args: [col(a), col(b)] }, 'numeric', [a, b], [a, 'div', b]);
      push('product', { op: 'mul', args: [col(a), col(b)] }, 'numeric', [a, b], [a, 'mul', b]);
      push('difference', { op: 'sub', args: [col(a), col(b)] }, 'numeric', [a, b], [a, 'sub', b]);
    }
  for (let i = 0; i < categories.length; i++)
    for (let j = i + 1; j < categories.length; j++) {
      const [a, b] = [categories[i], categories[j]];
      const values = a.distinct * b.distinct;
      if (values > o.maxCrossValues) continue;
      // twice the value pairs, a power of two: few collisions
      const buckets = Math.min(1 << 24, Math.max(16, 2 ** Math.ceil(Math.log2(values * 2))));
      push('cross', { op: 'cross', args: [col(a.name), col(b.name)], buckets }, 'categorical', [a.name, b.name], [a.name, b.name]);
    }
  if (hasTime) {
    // partitions: each key, and each key with each low-cardinality category (a user's rate on a category)
    const partitions: ColumnProfile[][] = [
      ...keys.map((k) => [k]),
      ...keys.flatMap((k) => categories.filter((c) => c.distinct <= 200).map((c) => [k, c])),
    ];
    const measures = numbers.slice(0, o.maxMeasures);
    for (const w of o.windows) {
      for (const p of partitions) {
        const by = p.map((c) => col(c.name));
        const names = p.map((c) => c.name);
        const agg = (a: WindowAgg, of?: string): FeatureExpr => ({ op: 'window', agg: a, by, ...(of ? { of: col(of) } : {}), over: w });
        push('rate', agg('rate'), 'numeric', names, [...names, w]);
        push('count', agg('count'), 'numeric', names, [...names, w]);
        // a measure's mean per key and per key × category (a user's average price within a category);
        // its sum per key
        for (const m of measures) push('mean', agg('mean', m.name), 'numeric', [...names, m.name], [m.name, 'by', ...names, w]);
        if (p.length === 1) {
          for (const m of measures) push('sum', agg('sum', m.name), 'numeric', [...names, m.name], [m.name, 'by', ...names, w]);
          for (const k of keys) if (k !== p[0]) push('distinct', agg('distinct', k.name), 'numeric', [...names, k.name], [k.name, 'by', ...names, w]);
        }
      }
    }
    for (const k of keys) {
      push('since', { op: 'since', by: [col(k.name)] }, 'numeric', [k.name], [k.name]);
      push('freq', { op: 'freq', arg: col(k.name) }, 'numeric', [k.name], [k.name]);
    }
  }
  // families in turn until the cap: every family is represented however many pairs there are
  const out: Candidate[] = [];
  const lists = [...families.values()];
  for (let i = 0; out.length < o.maxCandidates; i++) {
    let any = false;
    for (const l of lists) {
      if (i < l.length && out.length < o.maxCandidates) {
        out.push(l[i]);
        any = true;
      }
    }
    if (!any) break;
  }
  return out;
}
