import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { countFields, scrub, TableInspector } from './table-inspector';

describe('scrub: reader messages as the client sees them', () => {
  it("replaces the server's path with the client's file name and drops other paths and the SQL echo", () => {
    const file = '/srv/abacus/.data/tmp/3f9a0c.parquet';
    const msg = `Invalid Input Error: No magic bytes found at end of file '${file}'\n\nLINE 1: DESCRIBE SELECT * FROM read_parquet('${file}')`;
    expect(scrub(msg, file, 'clicks.parquet')).toBe("Invalid Input Error: No magic bytes found at end of file 'clicks.parquet'");
    expect(scrub('cannot open /etc/abacus/other.csv: denied', file, 'x.csv')).toBe('cannot open <path>: denied');
    expect(scrub('expected 0/1 values', file, 'x.csv')).toBe('expected 0/1 values');
  });
});

describe('a CSV whose lines have different numbers of fields', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-ragged-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const inspect = (name: string, text: string) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return new TableInspector().inspect(file, name, { maxColumns: 100 });
  };

  it("names the first such line, its field count and the header's", async () => {
    // a short line before a long one: the reader's own detection took the long line for the header
    await expect(inspect('short.csv', 'a,b,click\n1,2,0\n3,1\n0,5,1,9\n')).rejects.toThrow(
      'short.csv: line 3 has 2 field(s) where the header has 3',
    );
    await expect(inspect('long.csv', 'a,b,click\n1,2,0\n3,"x,y",1,EXTRA,MORE\n')).rejects.toThrow(
      'long.csv: line 3 has 5 field(s) where the header has 3',
    );
    await expect(inspect('semi.csv', 'a;b;click\n1;2;0\n3;1;1;4\n')).rejects.toThrow('semi.csv: line 3 has 4 field(s)');
  });

  it('accepts quoted delimiters and doubled quotes', async () => {
    const t = await inspect('ok.csv', 'a,"b ""q""",click\n1,"2,5",0\n3,"say ""hi, there""",1\n');
    expect(t.rowCount).toBe(2);
    expect(t.columns.map((c) => c.name)).toEqual(['a', 'b "q"', 'click']);
  });

  it('counts fields of a line as RFC 4180 splits them', () => {
    expect(countFields('1,2,3', ',')).toBe(3);
    expect(countFields('"a,b",c', ',')).toBe(2);
    expect(countFields('"say ""hi, there""",1', ',')).toBe(2);
    expect(countFields('', ',')).toBe(1);
    expect(countFields('a\tb', '\t')).toBe(2);
  });
});
