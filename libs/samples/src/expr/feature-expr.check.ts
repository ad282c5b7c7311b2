import {
  MAX_EXPR_DEPTH,
  MAX_EXPR_NODES,
  durationSeconds,
  featureExprSchema,
  type FeatureExpr,
  type WindowAgg,
} from './feature-expr.schema';

export type ExprKind = 'numeric' | 'categorical' | 'multi_id';
/** what a raw column holds, as far as expressions care */
export type ColumnClass = 'float' | 'integer' | 'string' | 'time' | 'list' | 'unsupported';

/** path inside the expression, as in a zod issue */
export type ExprPath = (string | number)[];

/** An expression cannot be used: `path` is where inside it (empty: the whole of it), `reason` why. */
export class ExprError extends Error {
  constructor(
    readonly path: ExprPath,
    readonly reason: string,
  ) {
    super(`${path.length ? path.join('.') + ': ' : ''}${reason}`);
    this.name = 'ExprError';
  }
}

/**
 * What a registered feature named by `ref` is: an expression of its own, a raw column of the set, or a
 * column joined from a feature table. A table feature stays a `ref` in the expanded expression: its
 * value is the table's as of the impression (the builder joins it point-in-time, see
 * ExprTableRef), read like a column of the row.
 */
export type RefTarget =
  | { kind: ExprKind; expression: FeatureExpr }
  | { kind: ExprKind; column: string }
  /** a feature joined from feature table `table`; `error`: why it cannot be joined to this set */
  | { kind: ExprKind; table: string; error?: string };

/** The set an expression is read over. */
export interface ExprContext {
  /** the set's raw columns by name */
  columns: ReadonlyMap<string, ColumnClass>;
  /** the label column: readable only from earlier rows (rate, or the value of an aggregate) */
  label: string;
  /**
   * other columns known only after the impression (conversions, dwell time, …): like the label, read
   * only from earlier rows, as the value (of) of an aggregate; never as the row's own value or a key
   */
  outcomes?: ReadonlySet<string>;
  /** whether the set has a time column (every window needs one) */
  hasTime: boolean;
  /** a registered feature by name, or null where there is none */
  resolveRef?: (name: string) => RefTarget | null;
}

/** Where an expression's values come from. */
export interface ExprLineage {
  /** raw columns of the set it reads (keys, values and measures) */
  columns: string[];
  /** registered features it refers to, directly or through them */
  refs: string[];
  /** features joined from feature tables it reads (as of each row's time), with their table */
  tables: { feature: string; table: string }[];
  /** its aggregates over earlier rows */
  windows: { op: 'window' | 'freq' | 'last' | 'since'; agg?: WindowAgg; by: string[]; of?: string; over?: string; n?: number }[];
  /** whether it reads the label (of earlier rows only: a click rate) */
  readsLabel: boolean;
  /** outcome columns it reads (of earlier rows only) */
  outcomes: string[];
  /** the longest window in seconds (Infinity: all earlier rows), 0 when it reads the current row only */
  historySeconds: number;
}

export interface CheckedExpr {
  /** the expression with every `ref` replaced by what it stands for */
  expr: FeatureExpr;
  kind: ExprKind;
  lineage: ExprLineage;
}

const WINDOWED = new Set(['window', 'freq', 'last', 'since']);

/** Whether a node (or anything under it) reads other rows. */
export function isWindowed(e: FeatureExpr): boolean {
  if ('op' in e) {
    if (WINDOWED.has(e.op)) return true;
    return children(e).some(([, c]) => isWindowed(c));
  }
  return false;
}

/** A node's sub-expressions with their path below it. */
export function children(e: FeatureExpr): [ExprPath, FeatureExpr][] {
  if (!('op' in e)) return [];
  switch (e.op) {
    case 'add':
    case 'sub':
    case 'mul':
    case 'div':
    case 'cross':
      return e.args.map((a, i) => [['args', i], a]);
    case 'log':
    case 'clip':
    case 'bucketize':
    case 'freq':
      return [[['arg'], e.arg]];
    case 'window':
      return [...e.by.map((b, i): [ExprPath, FeatureExpr] => [['by', i], b]), ...(e.of ? [[['of'], e.of] as [ExprPath, FeatureExpr]] : [])];
    case 'last':
      return [...e.by.map((b, i): [ExprPath, FeatureExpr] => [['by', i], b]), [['of'], e.of]];
    case 'since':
      return e.by.map((b, i) => [['by', i], b]);
  }
}

/** Parses JSON into an expression (ExprError at the path of the first problem). */
export function parseExprJson(json: unknown): FeatureExpr {
  const r = featureExprSchema.safeParse(json);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new ExprError(i.path as ExprPath, i.message);
  }
  return r.data;
}

/**
 * Replaces each `ref` by the expression or column of the feature it names, so what is checked and
 * compiled reads raw columns and feature-table features (kept as `ref`) only. A cycle, an unknown name
 * or a table that cannot be joined is an error at the path of the `ref` that leads to it.
 */
export function expandRefs(expr: FeatureExpr, ctx: ExprContext, refs: Set<string> = new Set()): FeatureExpr {
  const walk = (e: FeatureExpr, path: ExprPath, stack: string[]): FeatureExpr => {
    if ('ref' in e) {
      const at = [...path, 'ref'];
      if (stack.includes(e.ref)) {
        throw new ExprError(at, `cyclic definition: ${[...stack, e.ref].join(' -> ')}`);
      }
      const target = ctx.resolveRef?.(e.ref) ?? null;
      if (!target) throw new ExprError(at, `no registered feature '${e.ref}'`);
      refs.add(e.ref);
      if ('table' in target) {
        if (target.error) throw new ExprError(at, target.error);
        // joined from its table by the builder, read like a column of the row
        return e;
      }
      if ('column' in target) return { col: target.column };
      try {
        return walk(target.expression, [], [...stack, e.ref]);
      } catch (err) {
        if (err instanceof ExprError && !(err.reason.startsWith('cyclic') && stack.length)) {
          throw new ExprError(at, `in feature '${e.ref}'${err.path.length ? ` at ${err.path.join('.')}` : ''}: ${err.reason}`);
        }
        throw err;
      }
    }
    if (!('op' in e)) return e;
    const out: Record<string, unknown> = { ...e };
    const sub = (p: ExprPath, c: FeatureExpr) => walk(c, [...path, ...p], stack);
    switch (e.op) {
      case 'add':
      case 'sub':
      case 'mul':
      case 'div':
      case 'cross':
        out.args = e.args.map((a, i) => sub(['args', i], a));
        break;
      case 'log':
      case 'clip':
      case 'bucketize':
      case 'freq':
        out.arg = sub(['arg'], e.arg);
        break;
      case 'window':
      case 'last':
      case 'since':
        out.by = e.by.map((b, i) => sub(['by', i], b));
        if ('of' in e && e.of) out.of = sub(['of'], e.of);
        break;
    }
    return out as FeatureExpr;
  };
  return walk(expr, [], []);
}

/** The expression as short text for lineage (not the full syntax: feature-expr.text.ts writes that). */
function label(e: FeatureExpr): string {
  if ('col' in e) return e.col;
  if ('num' in e) return String(e.num);
  if ('ref' in e) return `@${e.ref}`;
  return `${e.op}(…)`;
}

/**
 * Checks an expression against a set's columns: every column exists and may be read, every operator
 * gets inputs of its kind, every window has a time to be measured on and reads row-level inputs only.
 * `want`: the kind the feature is registered as (default: what the expression gives, an integer column
 * read as a number). Returns the expanded expression, its kind and its lineage.
 */
export function checkExpr(input: FeatureExpr, ctx: ExprContext, want?: ExprKind): CheckedExpr {
  const refs = new Set<string>();
  const expr = expandRefs(input, ctx, refs);
  let nodes = 0;
  const columns = new Set<string>();
  const windows: ExprLineage['windows'] = [];
  let readsLabel = false;
  const outcomes = new Set<string>();
  const tables = new Map<string, string>();
  let history = 0;
  const fail = (path: ExprPath, reason: string): never => {
    throw new ExprError(path, reason);
  };
  const needTime = (path: ExprPath, what: string) => {
    if (!ctx.hasTime) fail(path, `${what} needs the sample set's time column (the set has none): earlier rows are found by time`);
  };
  const rowLevel = (e: FeatureExpr, path: ExprPath) => {
    if (isWindowed(e)) fail(path, 'the keys and values of an aggregate are read from each row: no aggregate inside an aggregate');
  };
  const mismatch = (path: ExprPath, got: ExprKind, wanted: ExprKind, what: string): never =>
    fail(path, `${what} is ${got}, where ${wanted === 'numeric' ? 'a number' : wanted === 'categorical' ? 'a categorical value' : 'a list of ids'} is needed`);

  // earlier: the node is the value of an aggregate, read from earlier rows (where outcomes may be read)
  const typeOf = (e: FeatureExpr, path: ExprPath, wanted: ExprKind | undefined, depth: number, earlier = false): ExprKind => {
    nodes++;
    if (nodes > MAX_EXPR_NODES) fail([], `more than ${MAX_EXPR_NODES} nodes (with the features it refers to expanded)`);
    if (depth > MAX_EXPR_DEPTH) fail(path, `nested more than ${MAX_EXPR_DEPTH} deep`);
    const check = (got: ExprKind, what: string): ExprKind => (wanted && got !== wanted ? mismatch(path, got, wanted, what) : got);
    if ('num' in e) return check('numeric', `the number ${e.num}`);
    if ('ref' in e) {
      // a feature-table feature (expandRefs keeps only those): its value as of the impression
      const target = ctx.resolveRef?.(e.ref);
      if (!target || !('table' in target)) return fail([...path, 'ref'], 'unexpanded reference');
      tables.set(e.ref, target.table);
      const got = target.kind;
      if (wanted && got !== wanted) {
        if (got === 'numeric' && wanted === 'categorical')
          return fail([...path, 'ref'], `feature '${e.ref}' (joined from ${target.table}) is a number, not categories: bucketize(@${e.ref}, [...]) makes categories of it`);
        return mismatch([...path, 'ref'], got, wanted, `feature '${e.ref}' (joined from ${target.table})`);
      }
      return got;
    }
    if ('col' in e) {
      const at = [...path, 'col'];
      const outcome = e.col === ctx.label || !!ctx.outcomes?.has(e.col);
      if (outcome && !earlier) {
        return fail(
          at,
          `'${e.col}' is ${e.col === ctx.label ? 'the label' : 'an outcome column'}: known only after the impression, so an expression ` +
            `reads it from earlier rows only, as the value of an aggregate (mean(${e.col}, by: …, over: …)${e.col === ctx.label ? ', rate(by: …, over: …)' : ''}), never the row's own value or a key`,
        );
      }
      if (outcome) {
        if (e.col === ctx.label) readsLabel = true;
        else outcomes.add(e.col);
      }
      const cls = ctx.columns.get(e.col);
      if (cls === undefined) {
        const names = [...ctx.columns.keys()].filter((c) => c !== ctx.label);
        return fail(at, `unknown column '${e.col}' (columns: ${names.slice(0, 40).join(', ')}${names.length > 40 ? ', …' : ''})`);
      }
      columns.add(e.col);
      switch (cls) {
        case 'unsupported':
          return fail(at, `column '${e.col}' has a type an expression cannot read`);
        case 'float':
        case 'time':
          if (wanted && wanted !== 'numeric')
            return fail(at, `column '${e.col}' holds numbers with fractions or times, not categories: bucketize(${e.col}, [...]) makes categories of it`);
          return 'numeric';
        case 'integer':
          if (wanted === 'multi_id') return mismatch(at, 'numeric', wanted, `column '${e.col}'`);
          return wanted ?? 'numeric';
        case 'string':
          return wanted && wanted !== 'categorical' ? mismatch(at, 'categorical', wanted, `column '${e.col}' (text)`) : 'categorical';
        case 'list':
          return wanted && wanted !== 'multi_id' ? mismatch(at, 'multi_id', wanted, `column '${e.col}' (a list)`) : 'multi_id';
      }
    }
    const sub = (p: ExprPath, c: FeatureExpr, k: ExprKind) => typeOf(c, [...path, ...p], k, depth + 1, earlier);
    // the value of an aggregate: read from earlier rows
    const value = (p: ExprPath, c: FeatureExpr, k: ExprKind) => typeOf(c, [...path, ...p], k, depth + 1, true);
    switch (e.op) {
      case 'add':
      case 'sub':
      case 'mul':
      case 'div':
        e.args.forEach((a, i) => sub(['args', i], a, 'numeric'));
        return check('numeric', `${e.op}(…)`);
      case 'log':
      case 'clip':
        sub(['arg'], e.arg, 'numeric');
        return check('numeric', `${e.op}(…)`);
      case 'bucketize':
        sub(['arg'], e.arg, 'numeric');
        return check('categorical', 'bucketize(…)');
      case 'cross':
        e.args.forEach((a, i) => sub(['args', i], a, 'categorical'));
        return check('categorical', 'cross(…)');
      case 'freq': {
        needTime(path, 'freq()');
        rowLevel(e.arg, [...path, 'arg']);
        sub(['arg'], e.arg, 'categorical');
        windows.push({ op: 'freq', by: [label(e.arg)] });
        history = Infinity;
        return check('numeric', 'freq(…)');
      }
      case 'window': {
        needTime([...path, 'over'], `${e.agg}()`);
        e.by.forEach((b, i) => {
          rowLevel(b, [...path, 'by', i]);
          sub(['by', i], b, 'categorical');
        });
        if (e.agg === 'count' || e.agg === 'rate') {
          if (e.of) fail([...path, 'of'], `${e.agg} takes no value (of): it ${e.agg === 'count' ? 'counts earlier rows' : 'is the click rate of earlier rows'}`);
        } else {
          if (!e.of) fail([...path, 'of'], `${e.agg} needs the value it aggregates (of)`);
          rowLevel(e.of!, [...path, 'of']);
          const k = e.agg === 'distinct' ? 'categorical' : 'numeric';
          if (e.of && 'col' in e.of && ctx.columns.get(e.of.col) === 'string' && k === 'numeric') {
            fail([...path, 'of', 'col'], `${e.agg} of a categorical column ('${e.of.col}') is not a number: use distinct, or count by it`);
          }
          value(['of'], e.of!, k);
        }
        if (e.agg === 'rate') readsLabel = true;
        windows.push({ op: 'window', agg: e.agg, by: e.by.map(label), ...(e.of ? { of: label(e.of) } : {}), over: e.over });
        history = Math.max(history, durationSeconds(e.over));
        return check('numeric', `${e.agg}(…)`);
      }
      case 'last': {
        needTime(path, 'last()');
        e.by.forEach((b, i) => {
          rowLevel(b, [...path, 'by', i]);
          sub(['by', i], b, 'categorical');
        });
        rowLevel(e.of, [...path, 'of']);
        value(['of'], e.of, 'categorical');
        windows.push({ op: 'last', by: e.by.map(label), of: label(e.of), n: e.n });
        history = Infinity;
        return check('multi_id', 'last(…)');
      }
      case 'since': {
        needTime(path, 'since()');
        e.by.forEach((b, i) => {
          rowLevel(b, [...path, 'by', i]);
          sub(['by', i], b, 'categorical');
        });
        windows.push({ op: 'since', by: e.by.map(label) });
        history = Infinity;
        return check('numeric', 'since(…)');
      }
    }
  };
  const kind = typeOf(expr, [], want, 1);
  return {
    expr,
    kind,
    lineage: {
      columns: [...columns].sort(),
      refs: [...refs].sort(),
      tables: [...tables].sort(([a], [b]) => (a < b ? -1 : 1)).map(([feature, table]) => ({ feature, table })),
      windows,
      readsLabel,
      outcomes: [...outcomes].sort(),
      historySeconds: history,
    },
  };
}

/** The class of a DuckDB column type. */
export function columnClassOfDuckdb(type: string): ColumnClass {
  if (/^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT)$/.test(type)) return 'integer';
  if (/^(FLOAT|DOUBLE|REAL|DECIMAL.*)$/.test(type)) return 'float';
  if (/^(DATE|TIMESTAMP(_S|_MS|_NS)?|TIMESTAMP WITH TIME ZONE)$/.test(type)) return 'time';
  if (/^(VARCHAR|BOOLEAN|UUID|ENUM\(.*\))$/.test(type)) return 'string';
  if (/\[\]$/.test(type)) return 'list';
  return 'unsupported';
}
