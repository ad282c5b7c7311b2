import { subtractCharts, type Chart } from './charts';

/** The list's "changes" cell: what moved since the previous report, or that it is the first. */
export function changesText(
  s: { newlyRemovable: number; noLongerRemovable: number; ivDrift: number; psiDrift: number; featuresAdded: number } | null,
  hasPrevious: boolean,
): string {
  if (!s) return '—';
  if (!hasPrevious) return 'first report';
  const parts = [
    s.newlyRemovable ? `+${s.newlyRemovable} removable` : '',
    s.noLongerRemovable ? `−${s.noLongerRemovable} removable` : '',
    s.ivDrift ? `${s.ivDrift} IV drift` : '',
    s.psiDrift ? `${s.psiDrift} PSI drift` : '',
    s.featuresAdded ? `${s.featuresAdded} new feature${s.featuresAdded === 1 ? '' : 's'}` : '',
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'no change';
}

/** The report's pruning curve and shuffle drops, drawn by the subtract charts from the report's JSON. */
export function reportCharts(content: unknown): Chart[] {
  if (typeof content !== 'object' || content === null) return [];
  const c = content as { curve?: unknown; maxDrop?: unknown; features?: unknown };
  return subtractCharts({ curve: c.curve, maxDrop: c.maxDrop, perFeature: c.features });
}

/** A saving as "12.0 bytes/entity (25.0%)". */
export function formatSaving(r: { saved: number; unit: string; share: number | null }): string {
  const v = Number.isFinite(r.saved) ? (Math.abs(r.saved) >= 100 ? r.saved.toFixed(0) : r.saved.toFixed(2)) : '—';
  return `${v} ${r.unit}${r.share === null ? '' : ` (${(r.share * 100).toFixed(1)}%)`}`.trim();
}

/** A score for a table cell: 4 decimals, or "—". */
export const fmt = (v: number | null | undefined, digits = 4): string =>
  v === null || v === undefined || !Number.isFinite(v) ? '—' : v.toFixed(digits);
