import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { firstDuplicateName, readCsvHeader, topLevelNames } from './raw-columns';

describe('raw column names', () => {
  it('reads a CSV header as written: quotes, doubled quotes, BOM, CRLF, a delimiter inside quotes', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-hdr-')), 'h.csv');
    fs.writeFileSync(file, '\ufeffa,"b,c","say ""hi""",a\r\n1,2,3,4\r\n');
    expect(await readCsvHeader(file, ',')).toEqual(['a', 'b,c', 'say "hi"', 'a']);
    fs.writeFileSync(file, 'x;y;z');
    expect(await readCsvHeader(file, ';')).toEqual(['x', 'y', 'z']);
    fs.rmSync(path.dirname(file), { recursive: true });
  });

  it('takes the top-level names of a flattened Parquet schema, skipping nested children', () => {
    // root(3): a, tags(1: list(1: element)), a
    const nodes = [
      { name: 'schema', children: 3 },
      { name: 'a', children: 0 },
      { name: 'tags', children: 1 },
      { name: 'list', children: 1 },
      { name: 'element', children: 0 },
      { name: 'a', children: 0 },
    ];
    expect(topLevelNames(nodes)).toEqual(['a', 'tags', 'a']);
    expect(firstDuplicateName(topLevelNames(nodes))).toEqual({ name: 'a', other: 'a', first: 1, second: 3 });
  });

  it('finds names equal ignoring case, and none among distinct names', () => {
    expect(firstDuplicateName(['id', 'Click', 'click'])).toEqual({ name: 'click', other: 'Click', first: 2, second: 3 });
    expect(firstDuplicateName(['a', 'b', 'a_1'])).toBeNull();
  });
});
