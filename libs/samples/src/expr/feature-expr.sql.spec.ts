import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { durationSeconds, type FeatureExpr } from './feature-expr.schema';
import { ExprError, checkExpr, type ColumnClass, type ExprContext } from './feature-expr.check';
import { compileExpr, type ExprSqlContext } from './feature-expr.sql';
import { parseExprText } from './feature-expr.text';

/**
 * The compiled SQL against a plain reading of the rules on small random tables: every aggregate reads
 * the rows of its key strictly before the row's time; nothing the row's own label, an outcome column
 * or any row at or after its time holds can change its value.
 */
interface Row {
  rid: number;
  t: number;
  user: number | null;
  cat: string | null;
  item: number;
  price: number | null;
  click: number;
  /** a planted leak: the row's own click, declared an outcome column */
  leak: number;
}

const columns = new Map<string, ColumnClass>([
  ['user', 'integer'],
  ['cat', 'string'],
  ['item', 'integer'],
  ['price', 'float'],
  ['click', 'integer'],
  ['leak', 'integer'],
]);
const exprCtx: ExprContext = { columns, label: 'click', hasTime: true, outcomes: new Set(['leak']) };
const sqlCtx: ExprSqlContext = {
  column: (n) => `s."${n}"`,
  classOf: (n) => columns.get(n)!,
  time: 's.__t',
  label: 'CAST(s.click AS DOUBLE)',
  rowId: 's.__rid',
  inner: () => {
    throw new Error('set per query');
  },
};

let db: DuckDBInstance;
let con: DuckDBConnection;
beforeAll(async () => {
  db = await DuckDBInstance.create(':memory:');
  con = await db.connect();
});
afterAll(() => {
  con.closeSync();
  db.closeSync();
});

const sqlValue = (v: unknown): string => (v === null ? 'NULL' : typeof v === 'string' ? `'${v}'` : String(v));

/** the compiled expression's value for every row (by rid) */
async function evaluate(rows: Row[], expr: FeatureExpr): Promise<unknown[]> {
  const checked = checkExpr(expr, exprCtx);
  const inner: string[] = [];
  const c = compileExpr(checked, { ...sqlCtx, inner: (sql) => (inner.push(`${sql} AS __x${inner.length}`), `s.__x${inner.length - 1}`) });
  const values = rows
    .map((r) => `(${[r.rid, r.t, r.user, r.cat, r.item, r.price, r.click, r.leak].map(sqlValue).join(', ')})`)
    .join(', ');
  const table = `(SELECT CAST(rid AS INTEGER) AS __rid, CAST(t AS DOUBLE) AS __t, CAST("user" AS INTEGER) AS "user", CAST(cat AS VARCHAR) AS cat,
    CAST(item AS INTEGER) AS item, CAST(price AS DOUBLE) AS price, CAST(click AS INTEGER) AS click, CAST(leak AS INTEGER) AS leak
    FROM (VALUES ${values}) v(rid, t, "user", cat, item, price, click, leak))`;
  const from = inner.length ? `(SELECT s.*, ${inner.join(', ')} FROM ${table} s)` : table;
  const r = await con.runAndReadAll(`SELECT s.__rid, ${c.sql} FROM ${from} s ORDER BY s.__rid`);
  return r.getRows().map((row) => {
    const v = row[1];
    if (typeof v === 'bigint') return Number(v);
    if (v !== null && typeof v === 'object' && 'items' in (v as object)) return [...(v as { items: unknown[] }).items].map(String);
    return v;
  });
}

/** the same value read straight from the rules */
function reference(rows: Row[], e: FeatureExpr, r: Row): unknown {
  if (!('op' in e)) throw new Error('top-level aggregates only');
  const keyOf = (by: FeatureExpr[], row: Row) => by.map((b) => (row as unknown as Record<string, unknown>)[(b as { col: string }).col]);
  const num = (x: FeatureExpr, row: Row): number | null => {
    if ('col' in x) return (row as unknown as Record<string, number | null>)[x.col];
    if ('num' in x) return x.num;
    if ('op' in x && x.op === 'mul') {
      const a = num(x.args[0], row);
      const b = num(x.args[1], row);
      return a === null || b === null ? null : a * b;
    }
    throw new Error('unexpected value');
  };
  const by = e.op === 'freq' ? [e.arg] : (e as { by: FeatureExpr[] }).by;
  const k = keyOf(by, r);
  if (k.some((v) => v === null)) return null;
  const same = (row: Row) => keyOf(by, row).every((v, i) => v === k[i]);
  const span = e.op === 'window' ? durationSeconds(e.over) : Infinity;
  const prior = rows.filter((o) => same(o) && o.t < r.t && o.t >= r.t - span);
  switch (e.op) {
    case 'freq':
      return prior.length;
    case 'since':
      return prior.length ? r.t - Math.max(...prior.map((o) => o.t)) : null;
    case 'last': {
      const part = rows.filter(same).sort((a, b) => a.t - b.t || a.rid - b.rid);
      // the n rows before the first of this row's time (however many share it)
      const at = part.findIndex((o) => o.t === r.t);
      const col = (e.of as { col: string }).col;
      return part
        .slice(Math.max(0, at - e.n), at)
        .map((o) => (o as unknown as Record<string, unknown>)[col])
        .filter((v) => v !== null)
        .map(String);
    }
    case 'window': {
      const vals = e.of ? prior.map((o) => num(e.of!, o)).filter((v): v is number => v !== null) : [];
      switch (e.agg) {
        case 'count':
          return prior.length;
        case 'rate':
          return prior.length ? prior.reduce((a, o) => a + o.click, 0) / prior.length : null;
        case 'sum':
          return vals.reduce((a, v) => a + v, 0);
        case 'mean':
          return vals.length ? vals.reduce((a, v) => a + v, 0) / vals.length : null;
        case 'distinct': {
          const col = (e.of as { col: string }).col;
          return new Set(prior.map((o) => (o as unknown as Record<string, unknown>)[col]).filter((v) => v !== null)).size;
        }
      }
    }
  }
  throw new Error(`no reference for ${e.op}`);
}

const rowsArb = fc
  .array(
    fc.record({
      hour: fc.integer({ min: 0, max: 60 }),
      user: fc.option(fc.integer({ min: 1, max: 3 }), { freq: 8 }),
      cat: fc.option(fc.constantFrom('a', 'b', 'c'), { freq: 8 }),
      item: fc.integer({ min: 1, max: 6 }),
      price: fc.option(fc.integer({ min: -50, max: 50 }).map((v) => v / 4), { freq: 6 }),
      click: fc.integer({ min: 0, max: 1 }),
    }),
    { minLength: 1, maxLength: 70 },
  )
  .map((rs) => rs.map((r, rid): Row => ({ rid, t: r.hour * 3600, user: r.user, cat: r.cat, item: r.item, price: r.price, click: r.click, leak: r.click })));

const key = fc.constantFrom(['user'], ['cat'], ['user', 'cat'], ['cat', 'item']);
const over = fc.constantFrom('1h', '3h', '12h', '1d', '2d');
const windowText = fc.oneof(
  fc.record({ agg: fc.constantFrom('count', 'rate'), by: key, over }).map((w) => `${w.agg}(by: [${w.by}], over: ${w.over})`),
  fc
    .record({ agg: fc.constantFrom('sum', 'mean'), of: fc.constantFrom('price', 'price * 2', 'leak', 'click'), by: key, over })
    .map((w) => `${w.agg}(${w.of}, by: [${w.by}], over: ${w.over})`),
  fc.record({ of: fc.constantFrom('item', 'cat'), by: key, over }).map((w) => `distinct(${w.of}, by: [${w.by}], over: ${w.over})`),
  key.map((k) => `freq(${k[0]})`),
  key.map((k) => `since(by: [${k}])`),
  fc.record({ of: fc.constantFrom('item', 'cat'), by: key, n: fc.integer({ min: 1, max: 4 }) }).map((w) => `last(${w.of}, by: [${w.by}], n: ${w.n})`),
);

const close = (got: unknown, want: unknown) => {
  if (typeof want === 'number' && typeof got === 'number') expect(got).toBeCloseTo(want, 9);
  else expect(got).toEqual(want);
};

describe('feature expressions in SQL', () => {
  it('every aggregate equals the rule read plainly: rows of its key strictly before the row time, within the window', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, windowText, async (rows, text) => {
        const e = parseExprText(text);
        const got = await evaluate(rows, e);
        for (const r of rows) close(got[r.rid], reference(rows, e, r));
      }),
      { numRuns: 150 },
    );
  });

  it('no expression reads the row own label, an outcome column, or any row at or after its time', async () => {
    // any expression the checks accept, over the planted leak and the label in every position they allow
    const leafNum = fc.constantFrom('price', 'item', 'leak', 'click', '2');
    const rowText = fc.oneof(
      leafNum,
      fc.tuple(leafNum, fc.constantFrom('+', '*', '/'), leafNum).map(([a, op, b]) => `${a} ${op} ${b}`),
      leafNum.map((a) => `log(${a})`),
      fc.tuple(fc.constantFrom('cat', 'leak', 'user'), fc.constantFrom('cat', 'click', 'item')).map(([a, b]) => `cross(${a}, ${b}, buckets: 50)`),
    );
    const anyWindow = fc.oneof(
      windowText,
      fc.record({ agg: fc.constantFrom('sum', 'mean'), of: rowText, by: fc.constantFrom('[user]', '[leak]', '[cat, click]'), over }).map((w) => `${w.agg}(${w.of}, by: ${w.by}, over: ${w.over})`),
    );
    const exprText = fc.oneof(rowText, anyWindow, fc.tuple(anyWindow, rowText).map(([w, r]) => `${w} + ${r}`));
    let accepted = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(rowsArb, exprText, fc.nat(), fc.nat(), async (rows, text, pick, seed) => {
        const e = parseExprText(text);
        try {
          checkExpr(e, exprCtx);
        } catch (err) {
          // refused: for reading the label or the leak as the row's own value or a key (or a kind mismatch)
          expect(err).toBeInstanceOf(ExprError);
          if (/is (the label|an outcome column): known only after the impression/.test((err as ExprError).reason)) refused++;
          else expect((err as ExprError).reason).toMatch(/is (multi_id|categorical|numeric), where (a number|a categorical value) is needed/);
          return;
        }
        accepted++;
        const r = rows[pick % rows.length];
        const before = (await evaluate(rows, e))[r.rid];
        // the row's own outcome flipped, every other row at or after its time changed in every column
        let s = seed;
        const rnd = (n: number) => ((s = (s * 1103515245 + 12345) % 2 ** 31), s % n);
        const changed = rows.map((o): Row => {
          if (o === r) return { ...o, click: 1 - o.click, leak: 1 - o.leak };
          if (o.t < r.t) return o;
          const click = rnd(2);
          return { rid: o.rid, t: o.t + rnd(3) * 3600, user: rnd(4) || null, cat: ['a', 'b', 'c', null][rnd(4)], item: 1 + rnd(6), price: rnd(5) ? rnd(80) / 4 - 10 : null, click, leak: click };
        });
        const after = (await evaluate(changed, e))[r.rid];
        close(after, before);
      }),
      { numRuns: 200 },
    );
    // both sides of the rule were exercised
    expect(accepted).toBeGreaterThan(20);
    expect(refused).toBeGreaterThan(20);
  });

  it('a window frame leaves out rows of the same instant, its own included, and keeps the one exactly a window earlier', async () => {
    const rows: Row[] = [
      { rid: 0, t: 0, user: 1, cat: 'a', item: 1, price: 1, click: 1, leak: 1 },
      { rid: 1, t: 3600, user: 1, cat: 'a', item: 2, price: 2, click: 0, leak: 0 },
      { rid: 2, t: 3600, user: 1, cat: 'a', item: 3, price: 4, click: 1, leak: 1 },
      { rid: 3, t: 7200, user: 1, cat: 'a', item: 4, price: 8, click: 1, leak: 1 },
    ];
    expect(await evaluate(rows, parseExprText('count(by: user, over: 1h)'))).toEqual([0, 1, 1, 2]);
    expect(await evaluate(rows, parseExprText('rate(by: user, over: 1h)'))).toEqual([null, 1, 1, 0.5]);
    expect(await evaluate(rows, parseExprText('last(item, by: user, n: 2)'))).toEqual([[], ['1'], ['1'], ['2', '3']]);
    expect(await evaluate(rows, parseExprText('since(by: user)'))).toEqual([null, 3600, 3600, 3600]);
  });
});
