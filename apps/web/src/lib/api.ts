/** The api's answers the pages read (the fields they show; the api sends more). */

export type ExperimentStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  pageSize: number;
}

export interface KeyInfo {
  id: string;
  name: string;
  prefix: string;
  role: 'viewer' | 'engineer' | 'admin';
  lines: string[];
  expiresAt: string | null;
}

export interface Experiment {
  id: string;
  kind: string;
  name: string;
  businessLine: string;
  owner: string;
  spec: Record<string, unknown>;
  status: ExperimentStatus;
  progress: number;
  progressMessage: string;
  result: Record<string, unknown> | null;
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface Trial {
  id: string;
  seq: number;
  kind: string;
  status: ExperimentStatus;
  progress: number;
  attempts: number;
  error: string | null;
  backend: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface ExperimentDetail extends Experiment {
  trials: Trial[];
}

export interface SchemaColumn {
  name: string;
  kind: string;
  sourceType: string;
}

/** A shared embedding of the DataBank (name@version), as GET /api/v1/embeddings lists it. */
export interface SharedEmbedding {
  id: string;
  ref: string;
  name: string;
  version: number;
  businessLine: string;
  owner: string;
  dim: number;
  slots: { name: string; rows: number; idSpace: string }[];
  sources: { businessLine: string; name: string; dataVersion: string | null; role: string; rows: number }[];
  sharingPolicy: { shareWith: string[]; updatableBy?: string[] };
  experimentId: string | null;
  createdAt: string;
  /** where it came from (strategy, parent, updatedBy) and what later steps found (updateResult, ownerCheck) */
  provenance?: EmbeddingProvenance;
  /** the lines whose models start from this version */
  usedBy?: { businessLine: string; experiments: number }[];
}

export interface EmbeddingDelta {
  delta: number;
  ciLow: number;
  ciHigh: number;
}

export interface EmbeddingProvenance {
  strategy?: string;
  parent?: string;
  updatedBy?: string;
  updateResult?: { line: string; validation: EmbeddingDelta; test: EmbeddingDelta; verdict: string };
  ownerCheck?: EmbeddingDelta & { line: string; parent: string; verdict: string; test: EmbeddingDelta };
}

export interface SampleSet {
  id: string;
  name: string;
  businessLine: string;
  owner: string;
  rowCount: number;
  labelColumn: string;
  labelSemantics: string;
  labelStats: { events: number | null; nonEvents: number | null; positive: string } | null;
  dataVersion: string | null;
  timeColumn: string | null;
  timeMin: number | null;
  timeMax: number | null;
  keyColumns: string[];
  schema: SchemaColumn[];
  sharingPolicy: { shareWith: string[] };
  /** registered by reference: where the data is kept, and the objects pinned at registration */
  location?: string | null;
  objects?: { key: string; size: number; rows: number; partition: Record<string, string> }[] | null;
  createdAt: string;
}

/** A registered model version, as GET /api/v1/models lists it. */
export interface RegisteredModel {
  id: string;
  name: string;
  version: number;
  businessLine: string;
  sampleSetId: string;
  features: string[];
  tier: number | null;
}

export interface BusinessLine {
  name: string;
  description?: string;
}

/** An answer other than 2xx, with the api's own message (its error bodies carry `message`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** a 400's issues, each with its request path (spec.maxDrop) and message */
    readonly issues: { path: string; message: string }[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The api's message from an error body, or the HTTP status when there is none. */
export function errorMessage(status: number, body: unknown): string {
  if (body && typeof body === 'object' && 'message' in body) {
    const m = (body as { message: unknown }).message;
    if (typeof m === 'string' && m) return m;
    if (Array.isArray(m) && m.length) return m.map(String).join('; ');
  }
  return `HTTP ${status}`;
}

/** The `issues` of an error body ([{ path, message, code }]), or []. */
export function issuesOf(body: unknown): { path: string; message: string }[] {
  const raw = body && typeof body === 'object' && 'issues' in body ? (body as { issues: unknown }).issues : null;
  if (!Array.isArray(raw)) return [];
  return raw
    .filter((i): i is { path: string; message: string } => !!i && typeof i.path === 'string' && typeof i.message === 'string')
    .map((i) => ({ path: i.path, message: i.message }));
}

/**
 * Calls /api/v1<path> with `Authorization: Bearer <key>`; parses JSON; throws ApiError on a non-2xx.
 * `key` is passed in (not read here), so sign-in can check a key before it is stored.
 */
export async function apiCall<T>(key: string, path: string, init: { method?: 'GET' | 'POST'; body?: unknown } = {}): Promise<T> {
  const res = await fetch(`/api/v1${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${key}`,
      accept: 'application/json',
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) throw new ApiError(res.status, errorMessage(res.status, body), issuesOf(body));
  return body as T;
}

export interface ReportSummary {
  features: number;
  removable: number;
  newlyRemovable: number;
  noLongerRemovable: number;
  ivDrift: number;
  psiDrift: number;
  featuresAdded: number;
}

export interface ReportFeature {
  feature: string;
  removable: boolean;
  combinedRank: number | null;
  iv: number | null;
  shuffleDrop: number | null;
  shuffleCi: [number | null, number | null] | null;
  psi: number | null;
}

export interface ReportContent {
  generatedAt: string;
  fireAt: string;
  trigger: string;
  model: { id: string; name: string; version: number; businessLine: string; owner: string };
  sampleSet: { id: string; name: string; dataVersion: string | null; rows: number; latest: boolean };
  experimentId: string;
  maxDrop: number;
  full: { auc: number | null; logloss: number | null };
  estimatedDrop: { mean: number; ciLow: number; ciHigh: number } | null;
  retrainCheck: { fullAuc: number; prunedAuc: number; drop: number; seeds: number[] } | null;
  confirmed: { auc: number; fullAuc: number; aucDrop: number; withinLimit: boolean } | null;
  features: ReportFeature[];
  removable: string[];
  curve: unknown[];
  savings: {
    resources: { resource: string; unit: string; saved: number; total: number; share: number | null }[];
    withoutCosts: string[];
  };
  changes: {
    previousReportId: string | null;
    previousGeneratedAt: string | null;
    newlyRemovable: string[];
    noLongerRemovable: string[];
    ivDrift: { feature: string; before: number; after: number; change: number }[];
    psi: { feature: string; psi: number; drift: boolean }[];
    psiDrift: string[];
    featuresAdded: { name: string; createdAt: string }[];
    thresholds: { psi: number; ivDrift: number };
  };
}

export interface Report {
  id: string;
  businessLine: string;
  modelName: string;
  modelId: string;
  scheduleId: string | null;
  trigger: 'schedule' | 'manual';
  fireAt: string;
  status: 'running' | 'succeeded' | 'failed';
  experimentId: string;
  previousReportId: string | null;
  summary: ReportSummary | null;
  error: string | null;
  owner: string;
  createdAt: string;
  finishedAt: string | null;
  content?: ReportContent | null;
  deliveries?: { id: string; channel: string; target: string; status: string; attempts: number; lastError: string | null }[];
}

export interface ReportSchedule {
  id: string;
  businessLine: string;
  modelName: string;
  cron: string;
  timezone: string;
  emails: string[];
  owner: string;
  nextRunAt: string | null;
  scheduled: boolean;
}

/** A registered feature, as GET /api/v1/features lists it. */
export interface Feature {
  id: string;
  name: string;
  businessLine: string;
  owner: string;
  kind: 'numeric' | 'categorical' | 'multi_id';
  description: string;
  featureTableId: string | null;
  sourceTable: string | null;
  sourceColumn: string | null;
  entityKey: string | null;
  transform: { type: string } & Record<string, unknown>;
  /** a feature defined by an expression over a sample set (null: a column or table feature) */
  expression?: {
    text: string;
    sampleSet: string;
    lineage: { columns: string[]; refs: string[]; tables?: { feature: string; table: string }[]; readsLabel: boolean; historySeconds: number | null };
  } | null;
  costs: Record<string, unknown>;
  provenance: { businessLine: string; experimentId?: string; gain?: number; measuredAt?: string }[];
  createdAt: string;
  updatedAt: string;
}

/** An entity-keyed feature table (GET /api/v1/feature-tables). */
export interface FeatureTable {
  id: string;
  name: string;
  businessLine: string;
  owner: string;
  entityKey: string;
  timeColumn: string | null;
  schema: SchemaColumn[];
  rowCount: number;
  createdAt: string;
}

/** One experiment that measured a feature, with its verdict on it (GET /api/v1/features/:id/experiments). */
export interface FeatureExperiment {
  id: string;
  kind: string;
  name: string;
  status: ExperimentStatus;
  owner: string;
  createdAt: string;
  finishedAt: string | null;
  verdict: string;
  values: Record<string, unknown>;
  detail: string;
}

export interface LedgerFigure {
  value: number | null;
  unit: string;
  source: 'measured' | 'declared' | null;
  measuredAt: string | null;
  how: string | null;
}

/** A feature's row of the cost ledger (GET /api/v1/features/costs). */
export interface LedgerEntry {
  id: string;
  name: string;
  businessLine: string;
  entity: string | null;
  storage: LedgerFigure;
  communication: LedgerFigure;
  compute: LedgerFigure;
  noCost: boolean;
}

/** A registered model version with everything GET /api/v1/models/:id gives. */
export interface ModelVersion extends RegisteredModel {
  owner: string;
  architecture: Record<string, unknown>;
  trainingParams: Record<string, unknown>;
  checkpointPath: string | null;
  metrics: Record<string, number> | null;
  experimentId: string | null;
  costs: (Record<string, unknown> & { fractions?: Record<string, number> }) | null;
  createdAt: string;
}

/** A served model (GET /api/v1/serving). */
export interface ScheduleWindowView {
  tier: number;
  days: string[];
  from: string;
  to: string;
}

export interface ServedModel {
  id: string;
  businessLine: string;
  modelName: string;
  tiers: number[];
  webhookUrl: string;
  policy: Record<string, unknown> & { schedule?: { timeZone: string; windows: ScheduleWindowView[] } };
  /** the schedule's window open now (null: outside every window; absent: no schedule) */
  scheduleNow?: { index: number; tier: number; label: string; startedAt: number } | null;
  owner: string;
  activeTier: number;
  activeModelId: string;
  tierSince: string;
  lastSwitchAt: string | null;
  pinnedTier: number | null;
  pinReason: string | null;
  pinnedBy: string | null;
  lastSignals: Record<string, number> | null;
  lastSignalAt: string | null;
  createdAt: string;
}

/** GET /api/v1/serving/:id/active */
export interface ActiveTier {
  tier: number;
  modelId: string;
  version: number;
  features: string[];
  artifacts: { safetensors: string; onnx: string };
  since: string;
  pinned: { tier: number; reason: string | null; by: string | null; at: string | null } | null;
}

/** One switch of the log (GET /api/v1/serving/:id/log), with its webhook deliveries. */
export interface ServingSwitch {
  id: string;
  at: string;
  fromTier: number | null;
  toTier: number;
  modelId: string;
  reason: string;
  signals: Record<string, number> | null;
  manual: boolean;
  actor: string;
  deliveries: {
    id: string;
    status: 'pending' | 'delivered' | 'failed';
    attempts: number;
    statusCodes: number[];
    lastError: string | null;
    deliveredAt: string | null;
  }[];
}
