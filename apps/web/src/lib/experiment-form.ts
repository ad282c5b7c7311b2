/**
 * The new-experiment form as data: its fields per kind, their defaults (read from the api's own
 * schemas), the request body built from what the inputs hold, and each validation issue — the
 * browser's, from the same zod schema the api uses, or the api's 400 — placed next to its field.
 * Pure functions (unit-tested beside this file); the page (pages/NewExperimentPage.tsx) draws them.
 */
import {
  addSpecSchema,
  createExperimentSchema,
  discoverSpecSchema,
  DISCOVER_FAMILIES,
  divideSpecSchema,
  formatZodIssues,
  multiplySpecSchema,
  MULTIPLY_STRATEGIES,
  scoreSpecSchema,
  subtractSpecSchema,
  type ExperimentKind,
} from '@abacus/workflows/browser';

export const EXPERIMENT_KINDS = ['score', 'subtract', 'add', 'multiply', 'divide', 'discover'] as const satisfies readonly ExperimentKind[];
export type { ExperimentKind };

export const KIND_QUESTIONS: Record<ExperimentKind, string> = {
  score: 'How much information does each feature carry (WOE/IV), and is it stable over time (PSI)?',
  subtract: 'Which features can I delete without losing quality?',
  add: 'Would features proven elsewhere help my model?',
  multiply: "Can other business lines' samples make my model better?",
  divide: 'What is the best model I can afford?',
  discover: 'Which features nobody has written yet would help my model?',
};

export function isKind(v: unknown): v is ExperimentKind {
  return typeof v === 'string' && (EXPERIMENT_KINDS as readonly string[]).includes(v);
}

/** An input of a kind's own settings; `path` is where its value goes in the request body. */
export interface KnobField {
  id: string;
  label: string;
  path: string;
  /**
   * number: a number input ('' = the default); checkbox: a boolean; checks: one checkbox per option;
   * names: a comma-separated list of names, or `auto`; numbers: a comma-separated list of numbers;
   * text: a string ('' = left out)
   */
  type: 'number' | 'checkbox' | 'checks' | 'names' | 'numbers' | 'text';
  options?: readonly string[];
  hint: string;
  step?: string;
}

export const KNOBS: Record<ExperimentKind, KnobField[]> = {
  score: [
    { id: 'maxBins', label: 'Max bins', path: 'spec.binning.maxBins', type: 'number', hint: 'final bins per feature (2–100)' },
    {
      id: 'prebins',
      label: 'Pre-bins',
      path: 'spec.binning.prebins',
      type: 'number',
      hint: 'quantile bins of a numeric feature before merging (2–200)',
    },
    {
      id: 'minBinShare',
      label: 'Min bin share',
      path: 'spec.binning.minBinShare',
      type: 'number',
      step: 'any',
      hint: 'each final bin holds at least this share of the rows (0–0.5)',
    },
  ],
  subtract: [
    {
      id: 'scorers',
      label: 'Scorers',
      path: 'spec.scorers',
      type: 'checks',
      options: ['iv', 'shuffle'],
      hint: 'how features are ranked (both: by mean rank)',
    },
    {
      id: 'maxDrop',
      label: 'Max AUC drop',
      path: 'spec.maxDrop',
      type: 'number',
      step: 'any',
      hint: 'the largest accepted AUC drop of all removed features together (0–0.5)',
    },
    {
      id: 'batchFraction',
      label: 'Batch fraction',
      path: 'spec.batchFraction',
      type: 'number',
      step: 'any',
      hint: 'share of the features removed per round (0–1]',
    },
    {
      id: 'retrainSeeds',
      label: 'Retrain seeds',
      path: 'spec.retrainSeeds',
      type: 'number',
      hint: 'seeds per retraining check (0 = permutation estimate only, up to 10)',
    },
    {
      id: 'retrain',
      label: 'Retraining checks',
      path: 'spec.retrain',
      type: 'text',
      hint: 'auto, warm (fine-tune copies of the trained model without the features: fast) or scratch (train anew)',
    },
    {
      id: 'confirm',
      label: 'Confirm by retraining',
      path: 'spec.confirm',
      type: 'checkbox',
      hint: 'retrain without the removable features on fresh seeds',
    },
  ],
  add: [
    {
      id: 'candidates',
      label: 'Candidates',
      path: 'spec.candidates',
      type: 'names',
      hint: 'feature names, comma-separated (columns or registered features), or auto: features measured positive in other lines',
    },
    {
      id: 'minGain',
      label: 'Min gain',
      path: 'spec.minGain',
      type: 'number',
      step: 'any',
      hint: 'the smallest AUC gain worth a feature (0–0.1)',
    },
    {
      id: 'leaveOneIn',
      label: 'Leave-one-in models',
      path: 'spec.leaveOneIn',
      type: 'checkbox',
      hint: 'also train base + each candidate alone',
    },
  ],
  multiply: [
    {
      id: 'sources',
      label: 'Sources',
      path: 'spec.sources',
      type: 'names',
      hint: 'sample sets to borrow (id or line/name), comma-separated, or auto: every set shared with this line that fits',
    },
    {
      id: 'strategies',
      label: 'Strategies',
      path: 'spec.strategies',
      type: 'checks',
      options: MULTIPLY_STRATEGIES,
      hint: 'how the borrowed samples are used',
    },
    {
      id: 'embeddingUpdate',
      label: 'Embedding to update',
      path: 'spec.embedding.update',
      type: 'text',
      hint: 'embedding_update: the shared embedding version this line improves on its own rows (name@version; sources may be empty)',
    },
    {
      id: 'seeds',
      label: 'Seeds',
      path: 'spec.seeds',
      type: 'numbers',
      hint: 'training seeds, comma-separated (every model is trained once per seed)',
    },
  ],
  divide: [
    {
      id: 'tiers',
      label: 'Budget tiers',
      path: 'spec.tiers',
      type: 'numbers',
      hint: "fractions of the full model's cost, decreasing, comma-separated (per-resource budgets: advanced JSON)",
    },
    {
      id: 'largeBudget',
      label: 'Large tier budget',
      path: 'spec.large.budget',
      type: 'number',
      step: 'any',
      hint: "a tier above the model for off-peak traffic: a multiple of its cost above 1, e.g. 1.5, from the line's registered features it leaves out (empty: none)",
    },
    { id: 'seeds', label: 'Retraining seeds', path: 'spec.seeds', type: 'number', hint: 'seeds per tier (1–10)' },
    {
      id: 'publishAs',
      label: 'Publish as',
      path: 'spec.publishAs',
      type: 'text',
      hint: 'model name the tiers are published under (default: derived)',
    },
  ],
  discover: [
    {
      id: 'families',
      label: 'Expression families',
      path: 'spec.families',
      type: 'checks',
      options: DISCOVER_FAMILIES,
      hint: 'what to propose: unused columns, log, ratios / products / differences of numbers, crosses of categories, and per-key counts, click rates, means, sums, distinct counts, time since and frequency over earlier rows',
    },
    {
      id: 'windows',
      label: 'Windows',
      path: 'spec.windows',
      type: 'names',
      hint: 'window lengths of the aggregates, comma-separated (e.g. 1d, 7d, 30d; h and m too)',
    },
    { id: 'maxCandidates', label: 'Max candidates', path: 'spec.maxCandidates', type: 'number', hint: 'candidates screened at most (1–5000)' },
    { id: 'topK', label: 'Verified', path: 'spec.topK', type: 'number', hint: 'the best candidates sent to the verified comparison (1–30)' },
    { id: 'seeds', label: 'Seeds', path: 'spec.seeds', type: 'number', hint: 'training seeds of the verified comparison (3–20)' },
    {
      id: 'minGain',
      label: 'Min gain',
      path: 'spec.minGain',
      type: 'number',
      step: 'any',
      hint: 'the smallest AUC gain worth a feature (0–0.1)',
    },
    {
      id: 'register',
      label: 'Register adopted',
      path: 'spec.register',
      type: 'checkbox',
      hint: 'register the adopted expressions as candidate features of the line',
    },
  ],
};

/** Where a kind's model goes in the spec: score names a sample set at the top of its spec. */
export const MODEL_PATH: Record<ExperimentKind, string> = {
  score: 'spec',
  subtract: 'spec.model',
  add: 'spec.base',
  multiply: 'spec.target',
  divide: 'spec.model',
  discover: 'spec.base',
};

export type KnobValue = string | boolean | string[];

export interface FormState {
  kind: ExperimentKind;
  name: string;
  businessLine: string;
  /** the model: a sample set (+ its feature columns) or a registered model (not for score) */
  source: 'sampleSet' | 'model';
  sampleSet: string;
  /** the sample set's columns that are checked */
  features: string[];
  /** more features by name, comma-separated: registered features joined from their tables */
  extraFeatures: string;
  model: string;
  knobs: Record<string, KnobValue>;
  /** a JSON object merged over the spec the fields build */
  advanced: string;
}

const SPEC_SCHEMAS = {
  score: scoreSpecSchema,
  subtract: subtractSpecSchema,
  add: addSpecSchema,
  multiply: multiplySpecSchema,
  divide: divideSpecSchema,
  discover: discoverSpecSchema,
} as const;

/** The smallest spec of a kind that parses, so the schema fills in its defaults. */
const PLACEHOLDER: Record<ExperimentKind, Record<string, unknown>> = {
  score: { sampleSet: 'x' },
  subtract: { model: { sampleSet: 'x' } },
  add: { base: { sampleSet: 'x' }, candidates: 'auto' },
  multiply: { target: { sampleSet: 'x' }, sources: 'auto' },
  divide: { model: { sampleSet: 'x' } },
  discover: { base: { sampleSet: 'x' } },
};

export function getPath(obj: unknown, path: string): unknown {
  let v: unknown = obj;
  for (const k of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) {
    if (o[k] === null || typeof o[k] !== 'object' || Array.isArray(o[k])) o[k] = {};
    o = o[k] as Record<string, unknown>;
  }
  o[keys[keys.length - 1]] = value;
}

/** The inputs' starting values: the schema's defaults (auto where a list has none). */
export function knobDefaults(kind: ExperimentKind): Record<string, KnobValue> {
  const spec = SPEC_SCHEMAS[kind].parse(PLACEHOLDER[kind]);
  const out: Record<string, KnobValue> = {};
  for (const f of KNOBS[kind]) {
    const v = getPath({ spec }, f.path);
    if (f.type === 'checkbox') out[f.id] = v === true;
    else if (f.type === 'checks') out[f.id] = Array.isArray(v) ? v.map(String) : [];
    else if (f.type === 'names') out[f.id] = Array.isArray(v) ? v.join(', ') : typeof v === 'string' ? v : 'auto';
    else if (f.type === 'numbers') out[f.id] = Array.isArray(v) ? v.map(String).join(', ') : '';
    else out[f.id] = v === undefined || v === null ? '' : String(v);
  }
  return out;
}

export function initialState(kind: ExperimentKind, businessLine = ''): FormState {
  return {
    kind,
    name: '',
    businessLine,
    source: 'sampleSet',
    sampleSet: '',
    features: [],
    extraFeatures: '',
    model: '',
    knobs: knobDefaults(kind),
    advanced: '',
  };
}

/** "a, b,,c " → ["a", "b", "c"] */
export function splitList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** A number input's text: '' = left out (the default applies); anything else as a number (NaN included, which the schema refuses). */
const toNumber = (s: string): number | undefined => (s.trim() === '' ? undefined : Number(s.trim()));

function knobValue(f: KnobField, v: KnobValue | undefined): unknown {
  if (f.type === 'checkbox') return v === true;
  if (f.type === 'checks') return Array.isArray(v) ? v : [];
  const s = typeof v === 'string' ? v : '';
  if (f.type === 'number') return toNumber(s);
  if (f.type === 'names') return s.trim().toLowerCase() === 'auto' ? 'auto' : splitList(s);
  if (f.type === 'numbers') return s.trim() === '' ? undefined : splitList(s).map(Number);
  return s.trim() === '' ? undefined : s.trim();
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** `over` merged into `base`: objects key by key, anything else replaced. */
export function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = isRecord(v) && isRecord(out[k]) ? deepMerge(out[k], v) : v;
  return out;
}

/** One problem, placed: `path` as the api writes it (spec.model.features.1); `field` the input it belongs to, or null. */
export interface PlacedIssue {
  path: string;
  message: string;
  field: string | null;
}

export type BuildResult = { ok: true; body: Record<string, unknown> } | { ok: false; issues: PlacedIssue[] };

/** The advanced JSON: '' is {}; otherwise it must be a JSON object. */
export function parseAdvanced(text: string): { ok: true; value: Record<string, unknown> } | { ok: false; message: string } {
  if (!text.trim()) return { ok: true, value: {} };
  try {
    const v: unknown = JSON.parse(text);
    if (!isRecord(v)) return { ok: false, message: 'must be a JSON object, e.g. {"folds": 5}' };
    return { ok: true, value: v };
  } catch (err) {
    return { ok: false, message: `not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** The body of POST /experiments that the inputs describe (before validation). */
export function buildBody(s: FormState): { body: Record<string, unknown> } | { advancedError: string } {
  const adv = parseAdvanced(s.advanced);
  if (!adv.ok) return { advancedError: adv.message };
  const body: Record<string, unknown> = { kind: s.kind, name: s.name.trim(), businessLine: s.businessLine };
  const m = MODEL_PATH[s.kind];
  if (s.source === 'model' && s.kind !== 'score') {
    // none chosen: left out, so the schema says once "name either a registered model or a sample set"
    if (s.model) setPath(body, `${m}.model`, s.model);
    else setPath(body, m, {});
  } else {
    if (s.sampleSet) setPath(body, `${m}.sampleSet`, s.sampleSet);
    setPath(body, `${m}.features`, [...s.features, ...splitList(s.extraFeatures).filter((f) => !s.features.includes(f))]);
  }
  for (const f of KNOBS[s.kind]) {
    const v = knobValue(f, s.knobs[f.id]);
    if (v !== undefined) setPath(body, f.path, v);
  }
  body.spec = deepMerge(body.spec as Record<string, unknown>, adv.value);
  return { body };
}

/** The inputs an issue can belong to, as the page shows them (hidden inputs are not listed). */
export interface FieldTarget {
  id: string;
  /** issue paths at or under any of these belong to the field */
  paths: string[];
}

/** The form's inputs for this state, each with the request paths it answers for. */
export function fieldTargets(s: FormState): FieldTarget[] {
  const m = MODEL_PATH[s.kind];
  const out: FieldTarget[] = [
    { id: 'name', paths: ['name'] },
    { id: 'businessLine', paths: ['businessLine'] },
  ];
  if (s.source === 'model' && s.kind !== 'score') {
    // the schema's "name either a registered model or a sample set" sits on `.model`
    out.push({ id: 'model', paths: [`${m}.model`, `${m}.sampleSet`] });
  } else {
    out.push({ id: 'sampleSet', paths: [`${m}.sampleSet`, ...(s.kind === 'score' ? [] : [`${m}.model`])] });
    out.push({ id: 'features', paths: [`${m}.features`] });
  }
  for (const f of KNOBS[s.kind]) out.push({ id: f.id, paths: [f.path] });
  out.push({ id: 'advanced', paths: ['advanced'] });
  return out;
}

const under = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}.`);

/**
 * The field an issue path belongs to: the one whose path is the longest prefix of it. A feature
 * named in the "more features" input (spec.model.features.<n>, n past the checked columns) belongs
 * to that input. Null: no field shows it (it goes to the summary at the top of the form).
 */
export function fieldFor(path: string, s: FormState): string | null {
  let best: { id: string; len: number } | null = null;
  for (const t of fieldTargets(s))
    for (const p of t.paths) if (under(path, p) && (!best || p.length > best.len)) best = { id: t.id, len: p.length };
  if (best?.id === 'features') {
    const m = /\.features\.(\d+)(\.|$)/.exec(path);
    if (m && Number(m[1]) >= s.features.length && splitList(s.extraFeatures).length) return 'extraFeatures';
  }
  return best?.id ?? null;
}

export function placeIssues(issues: { path: string; message: string }[], s: FormState): PlacedIssue[] {
  return issues.map((i) => ({ path: i.path, message: i.message, field: fieldFor(i.path, s) }));
}

/**
 * The form's request, checked by the api's own schema (createExperimentSchema): the body to send,
 * or every issue placed on its field. Nothing is sent unless this says ok.
 */
export function validateForm(s: FormState): BuildResult {
  const built = buildBody(s);
  if ('advancedError' in built)
    return { ok: false, issues: [{ path: 'advanced', message: built.advancedError, field: 'advanced' }] };
  const parsed = createExperimentSchema.safeParse(built.body);
  if (parsed.success) return { ok: true, body: built.body };
  return { ok: false, issues: placeIssues(formatZodIssues(parsed.error), s) };
}

/** The messages per field (in order) and those of no field, for the page. */
export function groupIssues(issues: PlacedIssue[]): { byField: Record<string, string[]>; summary: PlacedIssue[] } {
  const byField: Record<string, string[]> = {};
  const summary: PlacedIssue[] = [];
  for (const i of issues) {
    if (i.field) (byField[i.field] ??= []).push(i.message);
    else summary.push(i);
  }
  return { byField, summary };
}

/** A sample set's columns a model can use as features: not the label, time or key columns, not unsupported. */
export function featureColumns(ss: {
  schema: { name: string; kind: string }[];
  labelColumn: string;
  timeColumn: string | null;
  keyColumns: string[];
}): { name: string; kind: string }[] {
  const reserved = new Set([ss.labelColumn, ss.timeColumn, ...ss.keyColumns].filter(Boolean));
  return ss.schema.filter((c) => !reserved.has(c.name) && c.kind !== 'unsupported');
}
