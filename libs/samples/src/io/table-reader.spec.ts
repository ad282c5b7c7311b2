import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TableReadError } from './table-read.error';
import { describeTable, readTable } from './table-reader';
import type { CategoricalTableColumn, MultiIdTableColumn, NumericTableColumn } from './table.types';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'abacus-io-'));
  await writeFile(path.join(dir, 'ok.csv'), 'x,flag,city,label\n1.5,true,paris,1\n,false,,0\n3,true,rome,0\n4,,paris,1\n');
  await writeFile(path.join(dir, 'semi.csv'), 'a;b\n1;u\n2;v\n');
  await writeFile(path.join(dir, 'ok.tsv'), 'a\tb\n1\tu\n2\tv\n');
  await writeFile(path.join(dir, 'ragged.csv'), 'a,b,c\n1,x,2\n2,y\n3,z,4\n');
  await writeFile(path.join(dir, 'data.json'), '[]');
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  const file = path.join(dir, 'lists.parquet').replace(/'/g, "''");
  await con.run(
    `COPY (SELECT * FROM (VALUES (1, [3, 4]::INTEGER[], TIMESTAMP '1970-01-01 00:01:00', {'k': 1}),
                                  (2, []::INTEGER[], NULL, {'k': 2}),
                                  (3, NULL, TIMESTAMP '1970-01-02 00:00:00', {'k': 3}),
                                  (4, [7, NULL, 9]::INTEGER[], NULL, {'k': 4})) t(id, tags, "at", s)) TO '${file}' (FORMAT parquet)`,
  );
  con.closeSync();
  instance.closeSync();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('readTable', () => {
  it('reads CSV into numeric (NaN for null) and dictionary-encoded categorical columns', async () => {
    const t = await readTable(path.join(dir, 'ok.csv'));
    expect(t.rowCount).toBe(4);
    const [x, flag, city, label] = t.columns as [
      NumericTableColumn,
      CategoricalTableColumn,
      CategoricalTableColumn,
      NumericTableColumn,
    ];
    expect(x.kind).toBe('numeric');
    expect(Array.from(x.values)).toEqual([1.5, NaN, 3, 4]);
    expect(flag.kind).toBe('categorical');
    expect(flag.duckdbType).toBe('BOOLEAN');
    expect(flag.dictionary).toEqual(['true', 'false']);
    expect(Array.from(flag.codes)).toEqual([0, 1, 0, -1]);
    expect(city.dictionary).toEqual(['paris', 'rome']);
    expect(Array.from(city.codes)).toEqual([0, -1, 1, 0]);
    // few distinct integers: still numeric
    expect(label.kind).toBe('numeric');
    expect(Array.from(label.values)).toEqual([1, 0, 0, 1]);
  });

  it('detects ; and tab delimiters', async () => {
    expect((await readTable(path.join(dir, 'semi.csv'))).columns.map((c) => c.name)).toEqual(['a', 'b']);
    expect((await readTable(path.join(dir, 'ok.tsv'))).columns.map((c) => c.kind)).toEqual(['numeric', 'categorical']);
  });

  it('selects columns, overrides kinds, and names unknown columns with the available ones', async () => {
    const t = await readTable(path.join(dir, 'ok.csv'), { columns: ['label', 'city'], kinds: { label: 'categorical' } });
    expect(t.columns.map((c) => c.name)).toEqual(['label', 'city']);
    expect((t.columns[0] as CategoricalTableColumn).dictionary).toEqual(['1', '0']);
    const err = await readTable(path.join(dir, 'ok.csv'), { columns: ['nope'] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TableReadError);
    expect((err as TableReadError).message).toMatch(/unknown column 'nope' \(available: x, flag, city, label\)/);
    await expect(readTable(path.join(dir, 'ok.csv'), { kinds: { city: 'numeric' } })).rejects.toThrow(
      /cannot be read as numeric/,
    );
  });

  it('reads integer lists as CSR (null list = empty, null elements dropped), timestamps as epoch seconds, skips structs', async () => {
    const t = await readTable(path.join(dir, 'lists.parquet'));
    expect(t.columns.map((c) => c.name)).toEqual(['id', 'tags', 'at']);
    const tags = t.columns[1] as MultiIdTableColumn;
    expect(tags.kind).toBe('multi_id');
    expect(Array.from(tags.offsets)).toEqual([0, 2, 2, 2, 4]);
    expect(Array.from(tags.ids)).toEqual([3, 4, 7, 9]);
    expect(Array.from((t.columns[2] as NumericTableColumn).values)).toEqual([60, NaN, 86400, NaN]);
    await expect(readTable(path.join(dir, 'lists.parquet'), { columns: ['s'] })).rejects.toThrow(/unsupported type STRUCT/);
  });

  it('reads at most sampleRows rows: a seeded sample of a larger table, the same rows every time; a smaller one whole', async () => {
    const file = path.join(dir, 'many.parquet');
    const instance = await DuckDBInstance.create(':memory:');
    const con = await instance.connect();
    await con.run(`COPY (SELECT i AS v, 'c' || (i % 7) AS c FROM range(50000) r(i)) TO '${file}' (FORMAT parquet)`);
    con.closeSync();
    instance.closeSync();
    const a = await readTable(file, { sampleRows: 1000 });
    const b = await readTable(file, { sampleRows: 1000 });
    expect(a.rowCount).toBe(1000);
    const va = Array.from((a.columns[0] as NumericTableColumn).values);
    expect(va).toEqual(Array.from((b.columns[0] as NumericTableColumn).values));
    // distinct rows of the table, from all over it
    expect(new Set(va).size).toBe(1000);
    expect(va.every((v) => Number.isInteger(v) && v >= 0 && v < 50000)).toBe(true);
    expect(Math.max(...va) - Math.min(...va)).toBeGreaterThan(40000);
    const whole = await readTable(file, { sampleRows: 50000 });
    expect(Array.from((whole.columns[0] as NumericTableColumn).values)).toEqual(Array.from({ length: 50000 }, (_, i) => i));
  });

  it('fails clearly on missing files, unsupported extensions and ragged CSV rows', async () => {
    await expect(readTable(path.join(dir, 'missing.csv'))).rejects.toThrow(/missing\.csv: file does not exist/);
    await expect(readTable(path.join(dir, 'data.json'))).rejects.toThrow(/unsupported extension '\.json'/);
    const err = await readTable(path.join(dir, 'ragged.csv')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TableReadError);
    expect((err as TableReadError).file).toContain('ragged.csv');
    expect((err as TableReadError).reason).toMatch(/malformed/);
  });
});

describe('describeTable', () => {
  it('returns name, detected kind and DuckDB type, and the row count', async () => {
    const s = await describeTable(path.join(dir, 'lists.parquet'));
    expect(s.format).toBe('parquet');
    expect(s.rowCount).toBe(4);
    expect(s.columns).toEqual([
      { name: 'id', kind: 'numeric', duckdbType: 'INTEGER' },
      { name: 'tags', kind: 'multi_id', duckdbType: 'INTEGER[]' },
      { name: 'at', kind: 'numeric', duckdbType: 'TIMESTAMP' },
      { name: 's', kind: 'unsupported', duckdbType: 'STRUCT(k INTEGER)' },
    ]);
    await expect(describeTable(path.join(dir, 'nope.parquet'))).rejects.toBeInstanceOf(TableReadError);
  });
});
