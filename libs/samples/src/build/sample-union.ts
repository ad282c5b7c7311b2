import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { quoteIdent, quoteLiteral } from '../io/column-loader';
import { tableSource } from '../io/table-reader';

/** One sample set of a union: the target first, then the borrowed sets. */
export interface UnionPart {
  /** value of the domain column for its rows */
  domain: string;
  /** absolute path of a Parquet or CSV file, or of a folder of Parquet files (a set registered by reference, partition folders kept) */
  file: string;
  label: string;
  /** the label's event value when it is not 0/1 or false/true */
  positive?: string | null;
  time: string;
}

export interface SampleUnionRequest {
  parts: UnionPart[];
  /** feature columns; a part that lacks one contributes missing values */
  columns: string[];
  /** the target's test start: borrowed rows at or after it are dropped (leakage) */
  testFrom: number;
  /**
   * Share of the target's training rows (before `testFrom`) that is its validation split: the last
   * ones in (time, row) order, the count rounded as `max(1, min(n - 1, round(n * share)))` (n >= 2).
   * The first of them sets the validation start, and borrowed rows at or after it are dropped as well,
   * so every model built from a union of this target fits on rows before it and is judged on the same
   * target rows. Absent or 0: no validation start (only the test start drops rows).
   */
  validationShare?: number;
}

export interface SampleUnionResult {
  parts: {
    domain: string;
    rows: number;
    kept: number;
    droppedAtOrAfterTestStart: number;
    /** borrowed rows at or after the validation start and before the test start, dropped (0 for the target) */
    droppedAtOrAfterValidationStart: number;
    /** rows identical (features, label, time) to a row of an earlier part (the target, or a source listed before), dropped */
    duplicatesDropped: number;
    /** events / rows before the target's test start (the target's training rows; a source's rows before it, dropped at the validation start or not) */
    labelRate: number;
  }[];
  /**
   * The target's validation split (with `validationShare`): its rows from `from` (the time of the first
   * of them) up to the test start, the last `rows` of its training rows in (time, row) order.
   * Without a validation share: `from` is the test start and `rows` 0.
   */
  validation: { from: number; rows: number };
}

/** How many of n training rows are the validation split (the same count as the workflows' carve). */
export function validationRowCount(n: number, share: number): number {
  if (!(share > 0) || n < 2) return 0;
  return Math.min(n - 1, Math.max(1, Math.round(n * share)));
}

/** Column names of the union beside the features. */
export const UNION_LABEL = '__mlabel';
export const UNION_TIME = '__mtime';
export const UNION_DOMAIN = '__domain';

const NUMBER_TYPE = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|FLOAT|DOUBLE|DECIMAL.*)$/;

/**
 * A part's rows with `__row`, their place in the part's files in read order (a folder's files in path
 * order, as the sample builder numbers them): a file's row number, after those of the files before it
 * (only the order matters); a CSV file is copied once and numbered in file order.
 */
async function partRows(con: DuckDBConnection, file: string, n: number): Promise<string> {
  const source = await tableSource(file);
  if (source.format !== 'parquet' || !source.files?.length) {
    // CSV: copied once, numbered in file order
    await con.run(`CREATE TEMP TABLE __csv${n} AS SELECT * FROM ${source.sql}`);
    return `(SELECT *, CAST(rowid AS BIGINT) AS __row FROM __csv${n})`;
  }
  const list = `[${source.files.map(quoteLiteral).join(', ')}]`;
  const hive = source.hive ? ', hive_partitioning = true, hive_types_autocast = false' : ', hive_partitioning = false';
  if (source.files.length === 1)
    return `(SELECT * EXCLUDE (file_row_number), CAST(file_row_number AS BIGINT) AS __row FROM read_parquet(${list}, file_row_number = true${hive}))`;
  // files in read order: the file's place in the list above the row number (no file has 2^40 rows)
  return `(SELECT * EXCLUDE (filename, file_row_number), CAST(list_position(${list}, filename) AS BIGINT) * 1099511627776 + file_row_number AS __row
    FROM read_parquet(${list}, filename = true, file_row_number = true${hive}))`;
}

/** The epoch-seconds DOUBLE expression of a part's time column, from its DESCRIBE rows. */
function timeOf(column: string, described: unknown[][]): string {
  const type = String(described.find((r) => String(r[0]) === column)?.[1] ?? '');
  const t = quoteIdent(column);
  return NUMBER_TYPE.test(type) ? `CAST(${t} AS DOUBLE)` : `CAST(epoch(${t}) AS DOUBLE)`;
}

/**
 * Writes target + borrowed sample sets as one Parquet file (aligned by column name; the label as 0/1,
 * time as epoch seconds, a domain column), target rows first in their own order, so samples built from
 * it share one vocabulary across the sets and the target's rows come out as they would alone.
 * Written to a temporary name and renamed into place.
 */
export async function writeSampleUnion(req: SampleUnionRequest, out: string): Promise<SampleUnionResult> {
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  const tmp = path.join(path.dirname(out), `.${path.basename(out)}.${randomBytes(4).toString('hex')}`);
  try {
    await con.run('SET preserve_insertion_order = true');
    const selects: string[] = [];
    const result: SampleUnionResult = { parts: [], validation: { from: req.testFrom, rows: 0 } };
    // the validation start: the time of the first of the target's last training rows (time, row order)
    const target = req.parts[0];
    const targetSrc = await partRows(con, target.file, 0);
    const targetTime = timeOf(target.time, (await con.runAndReadAll(`DESCRIBE SELECT * FROM ${targetSrc}`)).getRows());
    const [[trainCount]] = (
      await con.runAndReadAll(`SELECT count(*) FROM ${targetSrc} WHERE ${targetTime} < ${req.testFrom}`)
    ).getRows();
    const nv = validationRowCount(Number(trainCount), req.validationShare ?? 0);
    let validationFrom = req.testFrom;
    if (nv > 0) {
      const [[from]] = (
        await con.runAndReadAll(
          `SELECT ${targetTime} FROM ${targetSrc} WHERE ${targetTime} < ${req.testFrom} ORDER BY ${targetTime}, __row LIMIT 1 OFFSET ${Number(trainCount) - nv}`,
        )
      ).getRows();
      validationFrom = Number(from);
      result.validation = { from: validationFrom, rows: nv };
    }
    for (const [i, p] of req.parts.entries()) {
      const src = i === 0 ? targetSrc : await partRows(con, p.file, i);
      const described = (await con.runAndReadAll(`DESCRIBE SELECT * FROM ${src}`)).getRows();
      const types = new Map(described.map((r) => [String(r[0]), String(r[1])]));
      const time = timeOf(p.time, described);
      const l = `CAST(${quoteIdent(p.label)} AS VARCHAR)`;
      const label = p.positive
        ? `CAST((${l} = ${quoteLiteral(p.positive)} OR TRY_CAST(${l} AS DOUBLE) = TRY_CAST(${quoteLiteral(p.positive)} AS DOUBLE)) AS INTEGER)`
        : `CAST(lower(${l}) IN ('1', '1.0', 'true') AS INTEGER)`;
      const cols = req.columns.filter((c) => types.has(c)).map(quoteIdent);
      // borrowed rows: before the validation start (the test start without one)
      const where = i === 0 ? '' : `WHERE ${time} < ${validationFrom}`;
      selects.push(
        `SELECT ${[...cols, `${label} AS ${UNION_LABEL}`, `${time} AS ${UNION_TIME}`, `${quoteLiteral(p.domain)} AS ${UNION_DOMAIN}`, `${i} AS __part`, '__row'].join(', ')} FROM ${src} ${where}`,
      );
      const [[rows, late, lateValidation, rate]] = (
        await con.runAndReadAll(
          `SELECT count(*), count(*) FILTER (WHERE ${time} >= ${req.testFrom}), count(*) FILTER (WHERE ${time} >= ${validationFrom} AND ${time} < ${req.testFrom}), avg(${label}) FILTER (WHERE ${time} < ${req.testFrom}) FROM ${src}`,
        )
      ).getRows();
      const dropped = i === 0 ? 0 : Number(late);
      const droppedValidation = i === 0 ? 0 : Number(lateValidation);
      result.parts.push({
        domain: p.domain,
        rows: Number(rows),
        kept: Number(rows) - dropped - droppedValidation,
        droppedAtOrAfterTestStart: dropped,
        droppedAtOrAfterValidationStart: droppedValidation,
        duplicatesDropped: 0,
        labelRate: rate === null ? 0 : Number(rate),
      });
    }
    const all = selects.map((s) => `(${s})`).join(' UNION ALL BY NAME ');
    const row = [...req.columns.map(quoteIdent), UNION_LABEL, UNION_TIME];
    const keep = [...row, UNION_DOMAIN].join(', ');
    // a borrowed row identical to one of an earlier part counts once; repeats within one set stay
    await con.run(
      `CREATE TEMP TABLE __u AS SELECT *, min(__part) OVER (PARTITION BY ${row.join(', ')}) AS __first FROM (${all})`,
    );
    const dups = (await con.runAndReadAll('SELECT __part, count(*) FROM __u WHERE __part <> __first GROUP BY __part')).getRows();
    for (const [part, n] of dups) {
      const r = result.parts[Number(part)];
      r.duplicatesDropped = Number(n);
      r.kept -= Number(n);
    }
    fs.mkdirSync(path.dirname(out), { recursive: true });
    await con.run(
      `COPY (SELECT ${keep} FROM __u WHERE __part = __first ORDER BY __part, __row) TO ${quoteLiteral(tmp)} (FORMAT parquet, COMPRESSION zstd)`,
    );
    fs.renameSync(tmp, out);
    return result;
  } finally {
    fs.rmSync(tmp, { force: true });
    con.closeSync();
    instance.closeSync();
  }
}
