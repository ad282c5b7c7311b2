/** The catalog pages' URL parameters, api queries and formatting: pure functions, unit-tested beside this file. */
import { LINE_NAME, parsePage } from './search';
import type { FeatureExperiment, ModelVersion, ServingSwitch } from './api';
import { tierAlias } from '@abacus/workflows/browser';

export const FEATURES_PAGE_SIZE = 25;
export const FEATURE_KINDS = ['numeric', 'categorical', 'multi_id'] as const;
/** candidate: no registered model of its line names it; in-model: one does */
export const FEATURE_ROLES = ['candidate', 'in-model'] as const;

/** The features page's URL: /features?q=age&line=feed&kind=numeric&owner=ana&role=candidate&page=2 */
export interface FeaturesSearch {
  q?: string;
  line?: string;
  kind?: (typeof FEATURE_KINDS)[number];
  owner?: string;
  role?: (typeof FEATURE_ROLES)[number];
  page?: number;
}

const text = (v: unknown, max = 200): string | undefined => {
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t && t.length <= max ? t : undefined;
};
const oneOf = <T extends string>(values: readonly T[], v: unknown): T | undefined =>
  typeof v === 'string' && (values as readonly string[]).includes(v) ? (v as T) : undefined;

/** The router's raw search → the features filters; values the api would refuse are dropped. */
export function parseFeaturesSearch(raw: Record<string, unknown>): FeaturesSearch {
  const out: FeaturesSearch = {};
  const q = text(raw.q);
  const line = text(raw.line);
  const kind = oneOf(FEATURE_KINDS, raw.kind);
  const owner = text(raw.owner);
  const role = oneOf(FEATURE_ROLES, raw.role);
  const page = parsePage(raw.page);
  if (q) out.q = q;
  if (line && LINE_NAME.test(line)) out.line = line;
  if (kind) out.kind = kind;
  if (owner) out.owner = owner;
  if (role) out.role = role;
  if (page) out.page = page;
  return out;
}

/** The api query of GET /features for these filters. */
export function featuresQuery(s: FeaturesSearch, pageSize = FEATURES_PAGE_SIZE): string {
  const q = new URLSearchParams();
  if (s.q) q.set('name', s.q);
  if (s.line) q.set('businessLine', s.line);
  if (s.kind) q.set('kind', s.kind);
  if (s.owner) q.set('owner', s.owner);
  if (s.role) q.set('role', s.role);
  q.set('page', String(s.page ?? 1));
  q.set('pageSize', String(pageSize));
  return q.toString();
}

export const hasFeatureFilters = (s: FeaturesSearch): boolean => Boolean(s.q || s.line || s.kind || s.owner || s.role);

/** How a verdict reads: good news for the feature, bad news, or neither (used for the badge's colour). */
export type Tone = 'good' | 'bad' | 'neutral' | 'pending';

const GOOD = new Set(['adopt', 'kept', 'strong', 'medium', 'in tiers', 'used as a feature', 'base feature']);
const BAD = new Set(['reject', 'removable', 'useless', 'in no tier']);

export function verdictTone(verdict: string): Tone {
  if (verdict === 'pending') return 'pending';
  if (GOOD.has(verdict)) return 'good';
  if (BAD.has(verdict)) return 'bad';
  return 'neutral';
}

/** "3 experiments: 1 adopt, 2 kept" — the provenance list in one line. */
export function summarizeProvenance(items: Pick<FeatureExperiment, 'verdict'>[], total = items.length): string {
  if (!total) return 'not measured by any experiment yet';
  const counts = new Map<string, number>();
  for (const i of items) counts.set(i.verdict, (counts.get(i.verdict) ?? 0) + 1);
  const parts = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([v, n]) => `${n} ${v}`);
  return `${total} experiment${total === 1 ? '' : 's'}${parts.length ? `: ${parts.join(', ')}` : ''}${total > items.length ? ' on this page' : ''}`;
}

/** A model version's label: "tier-2 (v5)" for a divide tier, else "v5". */
export function versionLabel(m: Pick<ModelVersion, 'version' | 'tier'>): string {
  return m.tier === null || m.tier === undefined ? `v${m.version}` : `${tierAlias(m.tier)} (v${m.version})`;
}

export interface ModelGroup<T> {
  key: string;
  businessLine: string;
  name: string;
  versions: T[];
}

/** Model versions grouped by (line, name), groups by line then name, versions newest first. */
export function groupModels<T extends Pick<ModelVersion, 'businessLine' | 'name' | 'version'>>(models: T[]): ModelGroup<T>[] {
  const groups = new Map<string, ModelGroup<T>>();
  for (const m of models) {
    const key = `${m.businessLine}/${m.name}`;
    const g = groups.get(key) ?? { key, businessLine: m.businessLine, name: m.name, versions: [] };
    g.versions.push(m);
    groups.set(key, g);
  }
  for (const g of groups.values()) g.versions.sort((a, b) => b.version - a.version);
  return [...groups.values()].sort((a, b) => a.businessLine.localeCompare(b.businessLine) || a.name.localeCompare(b.name));
}

/** A tier's budget or cost fractions, "storage 50% · communication 50% · compute 40%", or "—". */
export function formatFractions(f: Record<string, unknown> | null | undefined): string {
  if (!f) return '—';
  const parts = ['storage', 'communication', 'compute']
    .filter((k) => typeof f[k] === 'number' && Number.isFinite(f[k]))
    .map((k) => `${k} ${Math.round((f[k] as number) * 100)}%`);
  return parts.length ? parts.join(' · ') : '—';
}

/** A metric to four decimals, "—" when absent. */
export const formatMetric = (v: unknown): string => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(4) : '—');

/** Load signals in a fixed order: "cpu 92% · p99 180 ms · errors 1.0% · 1,200 qps". */
export function formatSignals(s: Record<string, number> | null | undefined): string {
  if (!s) return '—';
  const parts: string[] = [];
  const pct = (v: number, d = 0) => `${(v * 100).toFixed(d)}%`;
  if (typeof s.cpu === 'number') parts.push(`cpu ${pct(s.cpu)}`);
  if (typeof s.gpu === 'number') parts.push(`gpu ${pct(s.gpu)}`);
  if (typeof s.p99LatencyMs === 'number') parts.push(`p99 ${Math.round(s.p99LatencyMs)} ms`);
  if (typeof s.errorRate === 'number') parts.push(`errors ${pct(s.errorRate, 1)}`);
  if (typeof s.qps === 'number') parts.push(`${Math.round(s.qps).toLocaleString('en-US')} qps`);
  return parts.length ? parts.join(' · ') : '—';
}

/** A webhook delivery in words: "delivered after 2 attempts (HTTP 500, 200)". */
export function formatDelivery(d: ServingSwitch['deliveries'][number]): string {
  const codes = d.statusCodes.length ? ` (HTTP ${d.statusCodes.map((c) => (c === 0 ? 'no answer' : String(c))).join(', ')})` : '';
  const tries = `${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`;
  if (d.status === 'delivered') return `delivered after ${tries}${codes}`;
  if (d.status === 'failed') return `failed after ${tries}${codes}${d.lastError ? `: ${d.lastError}` : ''}`;
  return d.attempts ? `pending, ${tries} so far${codes}` : 'pending';
}

export const SWITCH_LOG_PAGE_SIZE = 20;

/** The switch log (oldest first from the api) as pages, newest first. */
export function switchLogPage<T>(
  log: T[],
  page: number,
  pageSize = SWITCH_LOG_PAGE_SIZE,
): { items: T[]; pages: number; page: number } {
  const pages = Math.max(1, Math.ceil(log.length / pageSize));
  const p = Math.min(Math.max(1, Math.floor(page) || 1), pages);
  const newest = [...log].reverse();
  return { items: newest.slice((p - 1) * pageSize, p * pageSize), pages, page: p };
}

/**
 * A 400's issues placed on a form's fields: each issue goes to the field its path starts with
 * (`costs.computeCost` → "costs.computeCost" when that is a field, else "costs"); the others to the summary.
 */
export function placeFieldIssues(
  issues: { path: string; message: string }[],
  fields: readonly string[],
): { byField: Record<string, string[]>; summary: { path: string; message: string }[] } {
  const byField: Record<string, string[]> = {};
  const summary: { path: string; message: string }[] = [];
  for (const i of issues) {
    const field = fields.filter((f) => i.path === f || i.path.startsWith(`${f}.`)).sort((a, b) => b.length - a.length)[0];
    if (field) (byField[field] ??= []).push(i.message);
    else summary.push(i);
  }
  return { byField, summary };
}

/** The models page's URL: /models?line=feed */
export interface ModelsSearch {
  line?: string;
}

export function parseModelsSearch(raw: Record<string, unknown>): ModelsSearch {
  const line = text(raw.line);
  return line && LINE_NAME.test(line) ? { line } : {};
}
