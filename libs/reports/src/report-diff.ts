import { psi } from '@abacus/scoring';
import { profileCounts, type FeatureProfile } from './feature-profile';

export interface ReportThresholds {
  /** PSI at or above this is drift */
  psi: number;
  /** |IV now − IV then| at or above this is drift */
  ivDrift: number;
}

/** What the diff needs of the previous report. */
export interface PreviousSnapshot {
  id: string;
  generatedAt: string;
  removable: string[];
  iv: Record<string, number | null>;
  profiles: Record<string, FeatureProfile>;
}

/** What the diff needs of this report. */
export interface CurrentSnapshot {
  removable: string[];
  iv: Record<string, number | null>;
  /** per feature of the previous report's profiles: this report's data binned by that profile (profileCounts order) */
  countsOnPrevious: Record<string, number[] | null>;
}

export interface ReportChanges {
  previousReportId: string | null;
  previousGeneratedAt: string | null;
  newlyRemovable: string[];
  noLongerRemovable: string[];
  ivDrift: { feature: string; before: number; after: number; change: number }[];
  /** PSI of every feature both reports profiled; `drift` when at or above the threshold */
  psi: { feature: string; psi: number; drift: boolean }[];
  psiDrift: string[];
  /** registered in the model's line after the previous report (or ever, for a first report: empty) */
  featuresAdded: { name: string; createdAt: string }[];
  thresholds: ReportThresholds;
}

/**
 * The change since the previous report of the same model: features that became removable or stopped
 * being removable, IV drift beyond the threshold, PSI per feature between the previous report's data
 * and this one's over the previous report's bins, and features registered since. Pure: the
 * previous report, this one's scores and binned counts, and the registry's new entries in.
 */
export function diffReports(
  prev: PreviousSnapshot | null,
  cur: CurrentSnapshot,
  registered: { name: string; createdAt: Date | string }[],
  thresholds: ReportThresholds,
): ReportChanges {
  if (!prev) {
    return {
      previousReportId: null,
      previousGeneratedAt: null,
      newlyRemovable: [],
      noLongerRemovable: [],
      ivDrift: [],
      psi: [],
      psiDrift: [],
      featuresAdded: [],
      thresholds,
    };
  }
  const before = new Set(prev.removable);
  const now = new Set(cur.removable);
  const ivDrift: ReportChanges['ivDrift'] = [];
  for (const [feature, after] of Object.entries(cur.iv)) {
    const was = prev.iv[feature];
    if (after === null || was === null || was === undefined) continue;
    const change = after - was;
    if (Math.abs(change) >= thresholds.ivDrift) ivDrift.push({ feature, before: was, after, change });
  }
  ivDrift.sort((a, b) => Math.abs(b.change) - Math.abs(a.change) || a.feature.localeCompare(b.feature));
  const psis: ReportChanges['psi'] = [];
  for (const [feature, profile] of Object.entries(prev.profiles)) {
    const counts = cur.countsOnPrevious[feature];
    if (!counts) continue;
    const value = psi(profileCounts(profile), counts);
    if (!Number.isFinite(value)) continue;
    psis.push({ feature, psi: value, drift: value >= thresholds.psi });
  }
  psis.sort((a, b) => b.psi - a.psi || a.feature.localeCompare(b.feature));
  const since = Date.parse(prev.generatedAt);
  return {
    previousReportId: prev.id,
    previousGeneratedAt: prev.generatedAt,
    newlyRemovable: cur.removable.filter((f) => !before.has(f)).sort(),
    noLongerRemovable: prev.removable.filter((f) => !now.has(f)).sort(),
    ivDrift,
    psi: psis,
    psiDrift: psis.filter((p) => p.drift).map((p) => p.feature),
    featuresAdded: registered
      .map((r) => ({ name: r.name, createdAt: new Date(r.createdAt).toISOString() }))
      .filter((r) => Date.parse(r.createdAt) > since)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name)),
    thresholds,
  };
}
