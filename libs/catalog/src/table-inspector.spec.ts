import { describe, expect, it } from 'vitest';
import { scrub } from './table-inspector';

describe('scrub: reader messages as the client sees them', () => {
  it("replaces the server's path with the client's file name and drops other paths and the SQL echo", () => {
    const file = '/srv/abacus/.data/tmp/3f9a0c.parquet';
    const msg = `Invalid Input Error: No magic bytes found at end of file '${file}'\n\nLINE 1: DESCRIBE SELECT * FROM read_parquet('${file}')`;
    expect(scrub(msg, file, 'clicks.parquet')).toBe("Invalid Input Error: No magic bytes found at end of file 'clicks.parquet'");
    expect(scrub('cannot open /etc/abacus/other.csv: denied', file, 'x.csv')).toBe('cannot open <path>: denied');
    expect(scrub('expected 0/1 values', file, 'x.csv')).toBe('expected 0/1 values');
  });
});
