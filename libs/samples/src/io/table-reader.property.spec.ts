import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { firstDuplicateName, readCsvHeader } from './raw-columns';
import { readTable } from './table-reader';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-csv-prop-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

type Kind = 'int' | 'float' | 'text';
interface GenColumn {
  name: string;
  kind: Kind;
  /** null = missing */
  values: (number | string | null)[];
}

/** RFC 4180 quoting: fields with a delimiter, quote or line break are quoted, quotes doubled; sometimes quoted anyway. */
const quote = (s: string, always: boolean) => (always || /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

function toCsv(cols: GenColumn[], rows: number, quoteAll: boolean): string {
  const lines = [cols.map((c) => quote(c.name, quoteAll)).join(',')];
  for (let r = 0; r < rows; r++) {
    lines.push(
      cols
        .map((c) => {
          const v = c.values[r];
          if (v === null) return '';
          return typeof v === 'number' ? String(v) : quote(v, quoteAll);
        })
        .join(','),
    );
  }
  return `${lines.join('\n')}\n`;
}

// names: letters first (so none reads as a number), unique ignoring case, no delimiter characters
const colName = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_ .-]{0,10}[A-Za-z0-9_]$|^[A-Za-z]$/);
// text values: start with "v" so no value sniffs as a number, date or boolean; commas, quotes, spaces inside
const textValue = fc.stringMatching(/^v[A-Za-z0-9 ,"'_;|-]{0,12}[A-Za-z0-9]$|^v$/);
const intValue = fc.integer({ min: -1_000_000_000, max: 1_000_000_000 });
const floatValue = fc
  .double({ min: -1e9, max: 1e9, noNaN: true, noDefaultInfinity: true })
  .map((x) => (Object.is(x, -0) ? 0 : x))
  .filter((x) => !Number.isInteger(x));

const table = fc.integer({ min: 1, max: 40 }).chain((rows) =>
  fc
    .uniqueArray(fc.tuple(colName, fc.constantFrom<Kind>('int', 'float', 'text')), {
      minLength: 1,
      maxLength: 6,
      selector: ([n]) => n.toLowerCase(),
    })
    .chain((specs) =>
      fc.tuple(
        fc.constant(rows),
        fc.tuple(
          ...specs.map(([name, kind]) => {
            const value: fc.Arbitrary<number | string> = kind === 'int' ? intValue : kind === 'float' ? floatValue : textValue;
            // the first row is never missing, so each column has a value to sniff its type from
            return fc
              .tuple(value, fc.array(fc.option(value, { freq: 4 }), { minLength: rows - 1, maxLength: rows - 1 }))
              .map(([first, rest]): GenColumn => ({ name, kind, values: [first, ...rest] }));
          }),
        ),
        fc.boolean(),
      ),
    ),
);

let seq = 0;

describe('CSV import round trip (property-based)', () => {
  it('generated tables written as CSV read back with the same rows, names and values', async () => {
    await fc.assert(
      fc.asyncProperty(table, async ([rows, cols, quoteAll]) => {
        const file = path.join(dir, `t${seq++}.csv`);
        fs.writeFileSync(file, toCsv(cols, rows, quoteAll));
        expect(await readCsvHeader(file, ',')).toEqual(cols.map((c) => c.name));
        expect(firstDuplicateName(cols.map((c) => c.name))).toBeNull();
        const t = await readTable(file);
        expect(t.rowCount).toBe(rows);
        expect(t.columns.map((c) => c.name)).toEqual(cols.map((c) => c.name));
        cols.forEach((g, i) => {
          const c = t.columns[i];
          if (g.kind === 'text') {
            expect(c.kind).toBe('categorical');
            if (c.kind !== 'categorical') return;
            expect(Array.from(c.codes, (k) => (k < 0 ? null : c.dictionary[k]))).toEqual(g.values);
          } else {
            expect(c.kind).toBe('numeric');
            if (c.kind !== 'numeric') return;
            expect(Array.from(c.values, (v) => (Number.isNaN(v) ? null : v))).toEqual(g.values);
          }
        });
        fs.rmSync(file);
      }),
      { numRuns: 40 },
    );
  });

  it('a repeated header name is found, whatever the quoting and case', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(colName, { minLength: 2, maxLength: 6, selector: (n) => n.toLowerCase() }),
        fc.nat(),
        fc.boolean(),
        fc.boolean(),
        async (names, pick, upper, quoteAll) => {
          const src = names[pick % names.length];
          const withDup = [...names, upper ? src.toUpperCase() : src];
          const file = path.join(dir, `d${seq++}.csv`);
          fs.writeFileSync(file, `${withDup.map((n) => quote(n, quoteAll)).join(',')}\n${withDup.map(() => '1').join(',')}\n`);
          const header = await readCsvHeader(file, ',');
          expect(header).toEqual(withDup);
          const dup = firstDuplicateName(header);
          expect(dup).not.toBeNull();
          expect(dup!.other.toLowerCase()).toBe(src.toLowerCase());
          expect(dup!.second).toBe(withDup.length);
          fs.rmSync(file);
        },
      ),
      { numRuns: 60 },
    );
  });
});
