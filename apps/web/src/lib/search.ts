/** The URL search parameters of the pages, and the api query strings built from them. */

/** What a label means, `event->outcome` in lower case (the api's own rule). */
export const LABEL_SEMANTICS = /^[a-z][a-z0-9_]*->[a-z][a-z0-9_]*$/;
/** The longest column name the api accepts in `hasColumns` (any text without a comma). */
export const MAX_COLUMN_NAME = 200;
/** A business line name. */
export const LINE_NAME = /^[a-z][a-z0-9_-]{0,62}$/;

export const BANK_PAGE_SIZE = 20;
export const EXPERIMENTS_PAGE_SIZE = 25;

/** The data page's filters as they stand in its URL: /data?line=feed&semantics=click-%3Eorder&columns=a,b&page=2 */
export interface BankSearch {
  line?: string;
  semantics?: string;
  columns?: string;
  page?: number;
}

/** "a, b,,c " → ["a", "b", "c"] (order kept, duplicates dropped). */
export function parseColumns(text: string | undefined): string[] {
  if (!text) return [];
  const out: string[] = [];
  for (const c of text.split(',').map((s) => s.trim())) if (c && !out.includes(c)) out.push(c);
  return out;
}

const str = (v: unknown): string | undefined => {
  if (typeof v === 'number') return String(v);
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t ? t : undefined;
};

/** A positive whole page number, or undefined (page 1). */
export function parsePage(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
  return Number.isInteger(n) && n > 1 ? n : undefined;
}

/** The router's raw search object → the data page's filters (empty values dropped). */
export function parseBankSearch(raw: Record<string, unknown>): BankSearch {
  const out: BankSearch = {};
  const line = str(raw.line);
  const semantics = str(raw.semantics);
  const columns = parseColumns(str(raw.columns)).join(',');
  const page = parsePage(raw.page);
  if (line) out.line = line;
  if (semantics) out.semantics = semantics;
  if (columns) out.columns = columns;
  if (page) out.page = page;
  return out;
}

/** What is wrong with the filters before they are sent (the api would answer 400), per field. */
export function validateBankFilters(f: BankSearch): Partial<Record<'line' | 'semantics' | 'columns', string>> {
  const errors: Partial<Record<'line' | 'semantics' | 'columns', string>> = {};
  if (f.line && !LINE_NAME.test(f.line)) errors.line = 'a business line name: lower case letters, digits, - and _';
  if (f.semantics && !LABEL_SEMANTICS.test(f.semantics))
    errors.semantics = 'expected event->outcome in lower case, e.g. exposure->click';
  const long = parseColumns(f.columns).filter((c) => c.length > MAX_COLUMN_NAME);
  if (long.length) errors.columns = `a column name has at most ${MAX_COLUMN_NAME} characters`;
  return errors;
}

/** The api query of GET /sample-sets for these filters: businessLine, labelSemantics, hasColumns, page, pageSize. */
export function sampleSetQuery(f: BankSearch, pageSize = BANK_PAGE_SIZE): string {
  const q = new URLSearchParams();
  if (f.line) q.set('businessLine', f.line);
  if (f.semantics) q.set('labelSemantics', f.semantics);
  const cols = parseColumns(f.columns);
  if (cols.length) q.set('hasColumns', cols.join(','));
  q.set('page', String(f.page ?? 1));
  q.set('pageSize', String(pageSize));
  return q.toString();
}

/** True when any filter is set (the empty state then says "nothing matches", not "nothing yet"). */
export const hasFilters = (f: BankSearch): boolean => Boolean(f.line || f.semantics || f.columns);

export const EXPERIMENT_KIND_VALUES = ['score', 'subtract', 'add', 'multiply', 'divide', 'discover'] as const;
export const EXPERIMENT_STATUS_VALUES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;

/** The experiments page's URL: /experiments?kind=subtract&status=running&line=feed&owner=ana&page=2 */
export interface ExperimentsSearch {
  kind?: (typeof EXPERIMENT_KIND_VALUES)[number];
  status?: (typeof EXPERIMENT_STATUS_VALUES)[number];
  line?: string;
  owner?: string;
  page?: number;
}

const oneOf = <T extends string>(values: readonly T[], v: unknown): T | undefined =>
  typeof v === 'string' && (values as readonly string[]).includes(v) ? (v as T) : undefined;

/** The router's raw search → the list's filters; values the api would refuse (an unknown kind, a bad line name) are dropped. */
export function parseExperimentsSearch(raw: Record<string, unknown>): ExperimentsSearch {
  const out: ExperimentsSearch = {};
  const kind = oneOf(EXPERIMENT_KIND_VALUES, raw.kind);
  const status = oneOf(EXPERIMENT_STATUS_VALUES, raw.status);
  const line = str(raw.line);
  const owner = str(raw.owner);
  const page = parsePage(raw.page);
  if (kind) out.kind = kind;
  if (status) out.status = status;
  if (line && LINE_NAME.test(line)) out.line = line;
  if (owner && owner.length <= 200) out.owner = owner;
  if (page) out.page = page;
  return out;
}

/** The api query of GET /experiments: kind, status, businessLine, owner, page, pageSize. */
export function experimentsQuery(s: ExperimentsSearch, pageSize = EXPERIMENTS_PAGE_SIZE): string {
  const q = new URLSearchParams();
  if (s.kind) q.set('kind', s.kind);
  if (s.status) q.set('status', s.status);
  if (s.line) q.set('businessLine', s.line);
  if (s.owner) q.set('owner', s.owner);
  q.set('page', String(s.page ?? 1));
  q.set('pageSize', String(pageSize));
  return q.toString();
}

/** True when the list is filtered (its empty state then says "nothing matches"). */
export const hasExperimentFilters = (s: ExperimentsSearch): boolean => Boolean(s.kind || s.status || s.line || s.owner);

/** The new-experiment form's URL: /experiments/new?kind=subtract&line=feed */
export interface NewExperimentSearch {
  kind?: (typeof EXPERIMENT_KIND_VALUES)[number];
  line?: string;
}

export function parseNewExperimentSearch(raw: Record<string, unknown>): NewExperimentSearch {
  const out: NewExperimentSearch = {};
  const kind = oneOf(EXPERIMENT_KIND_VALUES, raw.kind);
  const line = str(raw.line);
  if (kind) out.kind = kind;
  if (line && LINE_NAME.test(line)) out.line = line;
  return out;
}

/** Only same-app paths are followed after sign-in (never another origin). */
export function safeRedirect(target: unknown): string {
  if (typeof target !== 'string' || !target.startsWith('/') || target.startsWith('//') || target.startsWith('/signin'))
    return '/experiments';
  return target;
}
