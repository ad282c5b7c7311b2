import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { DuckDBInstance } from '@duckdb/node-api';
import type { DataSource } from 'typeorm';
import { exprContext, expressionSource, refTargets } from '@abacus/catalog';
import type { FeatureEntity, SampleSetEntity } from '@abacus/data';
import { buildSamples, checkExpr, loadColumns, parseExprJson, quoteLiteral, type EncodedSplit, type FeatureDef, type LoadColumn } from '@abacus/samples';
import { explicitPositive } from '../model/label-check';
import { measureStorage, type StorageMeasurement } from './storage-meter';

export function groupBy<T>(xs: T[], key: (x: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const x of xs) out.set(key(x), [...(out.get(key(x)) ?? []), x]);
  return out;
}

/** rows an expression's storage is measured over at most (its bytes per value do not depend on them) */
export const EXPRESSION_COST_ROWS = 2_000_000;

/**
 * Storage of expression features: their values computed over the rows of the set they were
 * registered over (the sample builder, as for training; the first EXPRESSION_COST_ROWS in time order
 * of a larger set), written as a Parquet column each (a number as FLOAT, a category as its INTEGER
 * id), and measured as any stored column is.
 */
export async function measureExpressions(
  ds: DataSource,
  ss: SampleSetEntity,
  files: string[],
  features: FeatureEntity[],
  skipped: { name: string; reason: string }[],
  /** a feature table's file (relative to the data directory) on this host */
  tableFile: (rel: string) => Promise<string>,
  maxRows = EXPRESSION_COST_ROWS,
): Promise<Map<string, StorageMeasurement>> {
  const defs: FeatureDef[] = [];
  for (const f of features) {
    if (f.kind === 'multi_id') {
      skipped.push({ name: f.name, reason: 'a list-valued expression is not measured (its storage depends on the serving store)' });
      continue;
    }
    try {
      const ast = parseExprJson(f.expression!.ast);
      const targets = await refTargets(ds, null, f.businessLine, ast);
      const checked = checkExpr(ast, exprContext(ss, targets), f.kind);
      const source = expressionSource(checked, targets);
      for (const t of Object.values(source.tables ?? {})) t.file = await tableFile(t.file);
      defs.push({ name: f.name, kind: f.kind, source });
    } catch (err) {
      skipped.push({ name: f.name, reason: `its expression cannot be read over ${ss.name}: ${(err as Error).message}` });
    }
  }
  if (!defs.length) return new Map();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), `abacus-expr-cost-${randomBytes(3).toString('hex')}-`));
  try {
    const positive = explicitPositive(ss);
    const capped = ss.rowCount > maxRows;
    const built = await buildSamples(
      {
        samples: {
          file: files.length === 1 ? files[0] : path.dirname(files[0]),
          label: ss.labelColumn,
          time: ss.timeColumn,
          ...(positive ? { positive } : {}),
        },
        features: defs,
        split: { testFraction: 0.2 },
        ...(capped ? { maxRows } : {}),
      },
      { workDir: work },
    );
    const cols: LoadColumn[] = defs.map((d) => {
      const values = (s: EncodedSplit) => {
        const j = s.numericNames.indexOf(d.name);
        if (j >= 0) return Float64Array.from({ length: s.rows }, (_, i) => s.numeric[i * s.numericNames.length + j]);
        const slot = s.slots.find((x) => x.name === d.name)!;
        return Int32Array.from({ length: s.rows }, (_, i) => (slot.offsets[i + 1] > slot.offsets[i] ? slot.ids[slot.offsets[i]] : -1));
      };
      const a = values(built.train);
      const b = values(built.test);
      const all = a instanceof Float64Array ? new Float64Array(a.length + b.length) : new Int32Array(a.length + b.length);
      all.set(a as never);
      all.set(b as never, a.length);
      return all instanceof Float64Array
        ? { name: d.name, type: 'DOUBLE' as const, data: all, nullWhen: 'nan' as const }
        : { name: d.name, type: 'INTEGER' as const, data: all, nullWhen: 'negative' as const };
    });
    const file = path.join(work, 'expressions.parquet');
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    try {
      await loadColumns(con, 'v', cols);
      const select = cols.map((c) => (c.type === 'DOUBLE' ? `CAST("${c.name.replace(/"/g, '""')}" AS FLOAT) AS "${c.name.replace(/"/g, '""')}"` : `"${c.name.replace(/"/g, '""')}"`));
      await con.run(`COPY (SELECT ${select.join(', ')} FROM v) TO ${quoteLiteral(file)} (FORMAT parquet)`);
    } finally {
      con.closeSync();
      db.closeSync();
    }
    return await measureStorage(
      [file],
      capped
        ? `${ss.name} (expressions computed over the first ${(built.train.rows + built.test.rows).toLocaleString('en-US')} of its ${ss.rowCount.toLocaleString('en-US')} rows, in time order)`
        : `${ss.name} (expressions computed over its ${built.train.rows + built.test.rows} rows)`,
      defs.map((d) => ({ column: d.name, kind: d.kind, sourceType: d.kind === 'numeric' ? 'FLOAT' : 'INTEGER' })),
    );
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
