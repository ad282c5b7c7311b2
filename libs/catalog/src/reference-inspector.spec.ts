import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { FileStore } from '@abacus/store';
import { columnsOf, readParquetFooter } from './reference-inspector';

describe('Parquet footers read through a store', () => {
  it('name every column type as DuckDB does when the worker reads the same file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-footer-'));
    const file = path.join(dir, 'types.parquet');
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    await con.run(`COPY (SELECT
        1::TINYINT AS a, 2::SMALLINT AS b, 3::INTEGER AS c, 4::BIGINT AS d, 5::UTINYINT AS e, 6::UBIGINT AS f,
        1.5::FLOAT AS g, 2.5::DOUBLE AS h, 3.25::DECIMAL(10,2) AS i, true AS j, 'x' AS k,
        DATE '2026-11-20' AS l, TIMESTAMP '2026-11-20 10:00:00' AS m, TIMESTAMPTZ '2026-11-20 10:00:00+00' AS n,
        [1, 2]::INTEGER[] AS o, ['p', 'q'] AS p, [1, 2]::BIGINT[] AS q,
        {'x': 1} AS r, MAP {'k': 1} AS s, 'abc'::BLOB AS t, gen_random_uuid() AS u
      FROM range(3)) TO '${file}' (FORMAT parquet)`);
    const described = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`)).getRowObjectsJS();
    con.closeSync();
    db.closeSync();
    const store = new FileStore(dir);
    const meta = await readParquetFooter(store, (await store.head('types.parquet'))!);
    expect(meta).not.toBeNull();
    const ours = columnsOf(meta!);
    const theirs = described.map((r) => ({ name: String(r.column_name), type: String(r.column_type) }));
    // nested types are unsupported either way: only their family must agree
    const family = (t: string) => (t.startsWith('STRUCT') ? 'STRUCT' : t.startsWith('MAP') ? 'MAP' : t);
    expect(ours.map((c) => ({ name: c.name, type: family(c.type) }))).toEqual(
      theirs.map((c) => ({ name: c.name, type: family(c.type) })),
    );
    expect(Number(meta!.num_rows)).toBe(3);
  });

  it('is null for an object that is not Parquet', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-footer-'));
    const store = new FileStore(dir);
    const info = await store.upload('x.parquet', Buffer.from('click,ts\n1,2\n0,3\n'));
    expect(await readParquetFooter(store, info)).toBeNull();
  });
});
