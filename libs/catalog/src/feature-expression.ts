import type { DataSource } from 'typeorm';
import { InvalidInputError, canSeeLine, type RequestScope } from '@abacus/core';
import { FeatureEntity, FeatureTableEntity, type ColumnSchema, type FeatureExpressionRecord, type SampleSetEntity } from '@abacus/data';
import {
  ExprError,
  checkExpr,
  children,
  columnClassOfDuckdb,
  exprToText,
  type CheckedExpr,
  type ColumnClass,
  type ExprContext,
  type ExprKind,
  type ExprTableRef,
  type FeatureExpr,
  type RefTarget,
} from '@abacus/samples';

/**
 * A registered feature an expression names, as the registry resolves it: a feature-table feature
 * carries where it is joined from (`join`, its file relative to the data directory as a table feature's
 * is; the sample key is the table's entity key, as for a table feature in a model).
 */
export type RegistryRefTarget = RefTarget | { kind: ExprKind; table: string; join: ExprTableRef; error?: string };

/** What expressions see of a set's columns. */
export function columnClasses(schema: ColumnSchema[]): Map<string, ColumnClass> {
  return new Map(
    schema.map((c): [string, ColumnClass] => {
      const cls = columnClassOfDuckdb(c.sourceType);
      if (cls !== 'unsupported' || c.kind === 'unsupported') return [c.name, cls];
      return [c.name, c.kind === 'numeric' ? 'float' : c.kind === 'categorical' ? 'string' : 'list'];
    }),
  );
}

/** The registry entry a reference names: the line's own first, else another line's the caller may see. */
export async function registeredFeature(ds: DataSource, scope: RequestScope | null, line: string, name: string): Promise<FeatureEntity | null> {
  const repo = ds.getRepository(FeatureEntity);
  const own = await repo.findOneBy({ businessLine: line, name });
  if (own) return own;
  const others = await repo.find({ where: { name }, order: { createdAt: 'ASC' } });
  return others.find((f) => !scope || canSeeLine(scope, f.businessLine)) ?? null;
}

function refsOf(e: FeatureExpr, out: Set<string>): Set<string> {
  if ('ref' in e) out.add(e.ref);
  for (const [, c] of children(e)) refsOf(c, out);
  return out;
}

/** Every feature an expression refers to, directly or through other expressions, as check/expand targets. */
export async function refTargets(
  ds: DataSource,
  scope: RequestScope | null,
  line: string,
  ast: FeatureExpr,
): Promise<Map<string, RegistryRefTarget>> {
  const targets = new Map<string, RegistryRefTarget>();
  const todo = [...refsOf(ast, new Set())];
  while (todo.length) {
    const name = todo.pop()!;
    if (targets.has(name)) continue;
    const f = await registeredFeature(ds, scope, line, name);
    if (!f) continue; // reported by the check at the reference's path
    if (f.expression) {
      const sub = f.expression.ast as unknown as FeatureExpr;
      targets.set(name, { kind: f.kind, expression: sub });
      todo.push(...refsOf(sub, new Set()));
    } else if (f.featureTableId) {
      const t = await ds.getRepository(FeatureTableEntity).findOneBy({ id: f.featureTableId });
      if (!t) continue;
      targets.set(name, { kind: f.kind, table: t.name, join: tableJoin(f, t) });
    } else targets.set(name, { kind: f.kind, column: f.sourceColumn ?? f.name });
  }
  return targets;
}

/**
 * Where a feature-table feature is joined from, as a model or an expression reads it: its table's first
 * file (relative to the data directory), versioned by the table's id, on the table's entity key (the
 * sample set's column of the same name), as of each impression when the table has a time column.
 */
export function tableJoin(f: FeatureEntity, t: FeatureTableEntity): ExprTableRef {
  return {
    kind: f.kind,
    file: t.files[0],
    version: t.id,
    entityKey: t.entityKey,
    sampleKey: t.entityKey,
    timeColumn: t.timeColumn,
    column: f.sourceColumn ?? f.name,
  };
}

/** The context an expression over a sample set is checked in. */
export function exprContext(ss: SampleSetEntity, targets: Map<string, RegistryRefTarget>): ExprContext {
  return {
    columns: columnClasses(ss.schema),
    label: ss.labelColumn,
    hasTime: !!ss.timeColumn,
    resolveRef: (n) => {
      const t = targets.get(n);
      if (!t || !('join' in t)) return t ?? null;
      // a feature-table feature: joined on its entity key as of the impression's time
      const j = t.join;
      if (!ss.schema.some((c) => c.name === j.sampleKey))
        return { ...t, error: `feature '${n}' is joined from table ${t.table} on ${j.sampleKey}, which sample set ${ss.name} lacks` };
      if (j.timeColumn && !ss.timeColumn)
        return { ...t, error: `feature '${n}' is joined from table ${t.table} as of each impression's time, and sample set ${ss.name} has no time column` };
      return t;
    },
  };
}

/**
 * The builder's source of a checked expression: the expression, and where each feature-table feature
 * it reads is joined from.
 */
export function expressionSource(
  checked: CheckedExpr,
  targets: Map<string, RegistryRefTarget>,
): { kind: 'expression'; expression: FeatureExpr; tables?: Record<string, ExprTableRef> } {
  const tables: Record<string, ExprTableRef> = {};
  for (const { feature } of checked.lineage.tables) {
    const t = targets.get(feature);
    if (!t || !('join' in t)) throw new Error(`feature '${feature}' has no table to join it from`);
    tables[feature] = t.join;
  }
  return { kind: 'expression', expression: checked.expr, ...(Object.keys(tables).length ? { tables } : {}) };
}

/**
 * Checks an expression for registration over `ss`: InvalidInputError at `field` plus the path inside
 * the expression (JSON), or at `field` with that path in the message (text).
 */
export async function checkFeatureExpression(
  ds: DataSource,
  scope: RequestScope | null,
  line: string,
  ast: FeatureExpr,
  ss: SampleSetEntity,
  want: ExprKind | undefined,
  field: 'expression' | 'expressionText',
  /** the name it is registered under: a reference to it is a cycle */
  self?: string,
): Promise<CheckedExpr> {
  const targets = await refTargets(ds, scope, line, ast);
  if (self !== undefined) targets.set(self, { kind: want ?? 'numeric', expression: ast });
  try {
    return checkExpr(ast, exprContext(ss, targets), want);
  } catch (err) {
    if (!(err instanceof ExprError)) throw err;
    if (field === 'expression') throw new InvalidInputError(['expression', ...err.path].join('.'), err.reason);
    throw new InvalidInputError(field, `${err.path.length ? `at ${err.path.join('.')}: ` : ''}${err.reason}`);
  }
}

/** The stored record of a checked expression. */
export function expressionRecord(ast: FeatureExpr, checked: CheckedExpr, ss: SampleSetEntity): FeatureExpressionRecord {
  const l = checked.lineage;
  return {
    ast: ast as unknown as Record<string, unknown>,
    text: exprToText(ast),
    sampleSetId: ss.id,
    sampleSet: ss.name,
    lineage: {
      columns: l.columns,
      refs: l.refs,
      ...(l.tables.length ? { tables: l.tables } : {}),
      windows: l.windows as unknown as Record<string, unknown>[],
      readsLabel: l.readsLabel,
      outcomes: l.outcomes,
      historySeconds: Number.isFinite(l.historySeconds) ? l.historySeconds : null,
    },
  };
}
