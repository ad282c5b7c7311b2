import type { FeatureProfile } from './feature-profile';
import type { ReportChanges, ReportThresholds } from './report-diff';

export interface CurvePoint {
  round: number;
  check: 'permutation' | 'retrain';
  removed: number;
  added: string[];
  drop: number;
  ciLow: number | null;
  ciHigh: number | null;
  accepted: boolean;
}

export interface ReportFeature {
  feature: string;
  removable: boolean;
  combinedRank: number | null;
  iv: number | null;
  shuffleDrop: number | null;
  shuffleCi: [number | null, number | null] | null;
  /** PSI against the previous report's data (null: no previous report or no profile) */
  psi: number | null;
}

export interface ResourceSaving {
  resource: 'storage' | 'communication' | 'compute';
  unit: string;
  /** sum over the removable features with a figure */
  saved: number;
  /** sum over all of the model's features with a figure */
  total: number;
  /** saved / total (null when total is 0) */
  share: number | null;
}

/** The stored JSON of a report (reports.content); the HTML is rendered from it. */
export interface ReportContent {
  version: 1;
  generatedAt: string;
  fireAt: string;
  trigger: 'schedule' | 'manual';
  model: { id: string; name: string; version: number; businessLine: string; owner: string };
  sampleSet: { id: string; name: string; dataVersion: string | null; rows: number; createdAt: string; latest: boolean };
  experimentId: string;
  maxDrop: number;
  full: { auc: number | null; logloss: number | null };
  estimatedDrop: { mean: number; ciLow: number; ciHigh: number } | null;
  retrainCheck: { fullAuc: number; prunedAuc: number; drop: number; seeds: number[] } | null;
  confirmed: { auc: number; fullAuc: number; aucDrop: number; withinLimit: boolean } | null;
  features: ReportFeature[];
  removable: string[];
  curve: CurvePoint[];
  savings: { resources: ResourceSaving[]; withoutCosts: string[]; candidatesPerRequest: number };
  changes: ReportChanges;
  thresholds: ReportThresholds;
  /** this report's binned distributions, for the next report's PSI */
  profiles: Record<string, FeatureProfile>;
}

/** What lists show. */
export interface ReportSummary {
  features: number;
  removable: number;
  newlyRemovable: number;
  noLongerRemovable: number;
  ivDrift: number;
  psiDrift: number;
  featuresAdded: number;
}

export function summarize(c: ReportContent): ReportSummary {
  return {
    features: c.features.length,
    removable: c.removable.length,
    newlyRemovable: c.changes.newlyRemovable.length,
    noLongerRemovable: c.changes.noLongerRemovable.length,
    ivDrift: c.changes.ivDrift.length,
    psiDrift: c.changes.psiDrift.length,
    featuresAdded: c.changes.featuresAdded.length,
  };
}
