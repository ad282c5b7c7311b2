/** Formatting for the pages: pure functions of their inputs (unit-tested beside this file). */

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

/** Succeeded, failed and cancelled experiments (and trials) change no more. */
export const isTerminal = (status: string): boolean => TERMINAL.has(status);

/** 0..1 → "42%" (clamped, whole percent). */
export function formatProgress(p: number): string {
  if (!Number.isFinite(p)) return '—';
  return `${Math.round(Math.min(1, Math.max(0, p)) * 100)}%`;
}

/** 1234567 → "1,234,567". */
export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return Math.round(n).toLocaleString('en-US');
}

/** An ISO timestamp → "2026-11-23 03:49 UTC" (UTC, so every reader sees the same time). */
export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * A value of a sample set's time column. The import keeps it as a number: plausibly epoch seconds
 * (2001–2286) or milliseconds are shown as UTC dates, anything else (a day index, a sequence) as is.
 */
export function formatTimeValue(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  if (v >= 1e9 && v < 1e10) return formatDateTime(new Date(v * 1000).toISOString());
  if (v >= 1e12 && v < 1e13) return formatDateTime(new Date(v).toISOString());
  return formatCount(v) === '—' ? String(v) : Number.isInteger(v) ? String(v) : v.toPrecision(6);
}

/** "ts: 1000 → 1299", or "no time column". */
export function formatTimeRange(column: string | null, min: number | null, max: number | null): string {
  if (!column) return 'no time column';
  return `${column}: ${formatTimeValue(min)} → ${formatTimeValue(max)}`;
}

/** Events / (events + non-events) with four decimals; "—" without stats, counts (a set registered by reference) or rows. */
export function formatRate(stats: { events: number | null; nonEvents: number | null } | null | undefined): string {
  if (!stats || stats.events === null || stats.nonEvents === null) return '—';
  const n = stats.events + stats.nonEvents;
  return n > 0 ? (stats.events / n).toFixed(4) : '—';
}

/** A sharing policy in words: private, all lines, or the lines named. */
export function formatSharing(shareWith: string[]): string {
  if (!shareWith.length) return 'private (own line only)';
  if (shareWith.includes('*')) return 'shared with all lines';
  return `shared with ${shareWith.join(', ')}`;
}

/** Columns per kind, e.g. "4 numeric, 1 categorical", in a stable order (most first, then by name). */
export function summarizeKinds(schema: { kind: string }[]): string {
  const counts = new Map<string, number>();
  for (const c of schema) counts.set(c.kind, (counts.get(c.kind) ?? 0) + 1);
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
}

/** "sha256:0123456789abcdef" stays as is; missing → "unknown". */
export const formatVersion = (v: string | null | undefined): string => v || 'unknown';

export type Scalar = string | number | boolean | null;

/**
 * A JSON value as rows of a key/value table: nested objects become dotted keys (spec.sampleSet),
 * arrays of scalars one comma-separated value, arrays of objects indexed keys (items.0.name).
 * Stops at `maxRows` rows (the caller shows the JSON for the rest).
 */
export function flattenForTable(value: unknown, maxRows = 200): { rows: [string, string][]; truncated: boolean } {
  const rows: [string, string][] = [];
  let truncated = false;
  const scalar = (v: Scalar): string => (v === null ? 'null' : typeof v === 'string' ? v : String(v));
  const walk = (v: unknown, key: string): void => {
    if (rows.length >= maxRows) {
      truncated = true;
      return;
    }
    if (v === null || typeof v !== 'object') {
      rows.push([key || '(value)', scalar(v as Scalar)]);
      return;
    }
    if (Array.isArray(v)) {
      if (!v.length) rows.push([key, '[]']);
      else if (v.every((x) => x === null || typeof x !== 'object'))
        rows.push([key, v.map((x) => scalar(x as Scalar)).join(', ')]);
      else v.forEach((x, i) => walk(x, key ? `${key}.${i}` : String(i)));
      return;
    }
    const entries = Object.entries(v as Record<string, unknown>);
    if (!entries.length) rows.push([key || '(value)', '{}']);
    for (const [k, x] of entries) walk(x, key ? `${key}.${k}` : k);
  };
  walk(value, '');
  return { rows, truncated };
}

/** Number of pages for `total` items (at least 1). */
export const pageCount = (total: number, pageSize: number): number => Math.max(1, Math.ceil(total / Math.max(1, pageSize)));

/** "1–20 of 53"; "0 of 0" for nothing. */
export function formatRange(page: number, pageSize: number, total: number): string {
  if (total <= 0) return '0 of 0';
  const first = (page - 1) * pageSize + 1;
  const last = Math.min(total, page * pageSize);
  return `${formatCount(first)}–${formatCount(last)} of ${formatCount(total)}`;
}

/** A list of records shown as a table of its own (e.g. a result's per-feature ranking). */
export interface RecordTable {
  key: string;
  columns: string[];
  rows: string[][];
  /** rows not shown (beyond maxRows) */
  more: number;
}

const isScalar = (v: unknown): boolean => v === null || typeof v !== 'object';
const isFlatRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  Object.values(v).every((x) => isScalar(x) || (Array.isArray(x) && x.every(isScalar)));
const cell = (v: unknown): string =>
  v === undefined ? '' : v === null ? 'null' : Array.isArray(v) ? v.map((x) => cell(x)).join(', ') : String(v);

/**
 * An object's top-level lists of flat records as tables (columns: their keys, first seen first), and
 * the object without them (for the key/value rows). Anything else is left in `rest` untouched.
 */
export function splitRecordTables(value: unknown, maxRows = 500): { rest: unknown; tables: RecordTable[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { rest: value, tables: [] };
  const rest: Record<string, unknown> = {};
  const tables: RecordTable[] = [];
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (Array.isArray(v) && v.length > 0 && v.every(isFlatRecord)) {
      const columns: string[] = [];
      for (const r of v) for (const k of Object.keys(r)) if (!columns.includes(k)) columns.push(k);
      const shown = v.slice(0, maxRows);
      tables.push({ key, columns, rows: shown.map((r) => columns.map((c) => cell(r[c]))), more: v.length - shown.length });
    } else rest[key] = v;
  }
  return { rest, tables };
}
