import { open } from 'node:fs/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { quoteLiteral } from './column-loader';
import { TableReadError } from './table-read.error';

/** Longest header line read before giving up (a header of thousands of long names still fits). */
const MAX_HEADER_BYTES = 8 * 1024 * 1024;

/**
 * The column names of a CSV file exactly as its header line spells them (RFC 4180 quoting, `""` inside
 * quotes). DuckDB renames a repeated name (`a`, `a` → `a`, `a_1`), so duplicates are found here.
 */
export async function readCsvHeader(file: string, delimiter: string): Promise<string[]> {
  const fh = await open(file, 'r');
  try {
    const names: string[] = [];
    let field = '';
    let quoted = false;
    let atFieldStart = true;
    let offset = 0;
    let first = true;
    const buf = Buffer.alloc(64 * 1024);
    const decoder = new TextDecoder('utf-8');
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
      const eof = bytesRead === 0;
      let text = decoder.decode(buf.subarray(0, bytesRead), { stream: !eof });
      if (first && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
      offset += bytesRead;
      for (let i = 0; i < text.length; i++) {
        const ch = text[i];
        if (quoted) {
          if (ch === '"') {
            if (text[i + 1] === '"') {
              field += '"';
              i++;
            } else quoted = false;
          } else field += ch;
        } else if (ch === '"' && atFieldStart) {
          quoted = true;
          atFieldStart = false;
        } else if (ch === delimiter) {
          names.push(field);
          field = '';
          atFieldStart = true;
        } else if (ch === '\n' || ch === '\r') {
          names.push(field);
          return names;
        } else {
          field += ch;
          atFieldStart = false;
        }
      }
      if (eof) {
        if (names.length || field) names.push(field);
        return names;
      }
      if (offset > MAX_HEADER_BYTES) throw new TableReadError(file, `the header line is longer than ${MAX_HEADER_BYTES} bytes`);
    }
  } finally {
    await fh.close();
  }
}

/** Top-level column names of a Parquet file from its own schema (nested children skipped), duplicates kept. */
export async function readParquetColumnNames(file: string): Promise<string[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  try {
    const rows = (
      await con.runAndReadAll(`SELECT name, num_children FROM parquet_schema(${quoteLiteral(file)})`)
    ).getRowObjectsJS() as { name: unknown; num_children: unknown }[];
    return topLevelNames(rows.map((r) => ({ name: String(r.name), children: Number(r.num_children ?? 0) || 0 })));
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

/** The flattened (depth-first) Parquet schema → the names of the root's children. */
export function topLevelNames(nodes: { name: string; children: number }[]): string[] {
  if (!nodes.length) return [];
  const skip = (i: number): number => {
    let j = i + 1;
    for (let c = 0; c < nodes[i].children && j < nodes.length; c++) j = skip(j);
    return j;
  };
  const names: string[] = [];
  let i = 1;
  for (let c = 0; c < nodes[0].children && i < nodes.length; c++) {
    names.push(nodes[i].name);
    i = skip(i);
  }
  return names;
}

/**
 * The first name that repeats, comparing without case as the SQL engine does (`A` and `a` are one
 * column to it), with both 1-based positions; null when all names differ.
 */
export function firstDuplicateName(names: string[]): { name: string; other: string; first: number; second: number } | null {
  const seen = new Map<string, number>();
  for (let i = 0; i < names.length; i++) {
    const key = names[i].toLowerCase();
    const prev = seen.get(key);
    if (prev !== undefined) return { name: names[i], other: names[prev], first: prev + 1, second: i + 1 };
    seen.set(key, i);
  }
  return null;
}
