import { useRef, useState, type FormEvent, type ReactNode } from 'react';
import { Link, useNavigate } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import {
  ApiError,
  apiCall,
  type BusinessLine,
  type Experiment,
  type KeyInfo,
  type Page,
  type RegisteredModel,
  type SampleSet,
} from '../lib/api';
import { useKey } from '../lib/auth';
import {
  EXPERIMENT_KINDS,
  featureColumns,
  groupIssues,
  initialState,
  KIND_QUESTIONS,
  KNOBS,
  placeIssues,
  validateForm,
  type ExperimentKind,
  type FormState,
  type KnobField,
  type KnobValue,
  type PlacedIssue,
} from '../lib/experiment-form';
import type { NewExperimentSearch } from '../lib/search';
import { ErrorNotice } from '../components';

/** The new-experiment form of one kind (/experiments/new?kind=subtract); the kind's tabs switch between forms. */
export function NewExperimentPage({ search }: { search: NewExperimentSearch }) {
  const kind: ExperimentKind = search.kind ?? 'subtract';
  return (
    <>
      <p>
        <Link to="/experiments">← All experiments</Link>
      </p>
      <h1>New experiment</h1>
      <nav className="kind-tabs" aria-label="experiment kind">
        {EXPERIMENT_KINDS.map((k) => (
          <Link
            key={k}
            to="/experiments/new"
            search={{ kind: k, ...(search.line ? { line: search.line } : {}) }}
            className={k === kind ? 'kind-tab active' : 'kind-tab'}
            aria-current={k === kind ? 'page' : undefined}
          >
            {k}
          </Link>
        ))}
      </nav>
      <p className="muted">
        <strong>{kind}</strong>: {KIND_QUESTIONS[kind]}
      </p>
      {/* a new form (fresh state) per kind */}
      <ExperimentForm key={kind} kind={kind} line={search.line} />
    </>
  );
}

const fid = (id: string) => `f-${id}`;

/** A labelled input with its hint and its issues (aria-describedby names both; aria-invalid when it has issues). */
function Field({
  id,
  label,
  hint,
  errors,
  children,
}: {
  id: string;
  label: string;
  hint?: ReactNode;
  errors?: string[];
  children: ReactNode;
}) {
  return (
    <div className="field">
      <label htmlFor={fid(id)}>{label}</label>
      {children}
      {hint ? (
        <span className="muted small hint" id={`${fid(id)}-hint`}>
          {hint}
        </span>
      ) : null}
      <FieldErrors id={id} errors={errors} />
    </div>
  );
}

function FieldErrors({ id, errors }: { id: string; errors?: string[] }) {
  if (!errors?.length) return null;
  return (
    <span className="field-error" id={`${fid(id)}-error`}>
      {errors.join('; ')}
    </span>
  );
}

/** The input attributes that tie it to its hint and issues. */
function described(id: string, hint: boolean, errors?: string[]) {
  const ids = [hint ? `${fid(id)}-hint` : null, errors?.length ? `${fid(id)}-error` : null].filter(Boolean).join(' ');
  return {
    id: fid(id),
    name: id,
    'aria-invalid': errors?.length ? true : undefined,
    'aria-describedby': ids || undefined,
  } as const;
}

const FIELD_LABELS: Record<string, string> = {
  name: 'Name',
  businessLine: 'Business line',
  sampleSet: 'Sample set',
  features: 'Features',
  extraFeatures: 'More features',
  model: 'Registered model',
  advanced: 'Advanced (JSON)',
};

function ExperimentForm({ kind, line }: { kind: ExperimentKind; line?: string }) {
  const key = useKey();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [state, setState] = useState<FormState>(() => initialState(kind, line ?? ''));
  const [issues, setIssues] = useState<PlacedIssue[]>([]);
  const summaryRef = useRef<HTMLDivElement>(null);

  const me = useQuery({
    queryKey: ['me', key],
    queryFn: () => apiCall<KeyInfo>(key, '/keys/me'),
    enabled: key !== '',
    staleTime: 60_000,
  });
  const lines = useQuery({
    queryKey: ['business-lines', key],
    queryFn: () => apiCall<BusinessLine[]>(key, '/business-lines'),
    enabled: key !== '',
    staleTime: 60_000,
  });
  // the line the form is for: the one chosen, else the first the key may use
  const lineNames = (lines.data ?? []).map((l) => l.name);
  const form: FormState = { ...state, businessLine: state.businessLine || lineNames[0] || '' };
  const bl = form.businessLine;
  const sets = useQuery({
    queryKey: ['sample-sets', key, `form:${bl}`],
    queryFn: () => apiCall<Page<SampleSet>>(key, `/sample-sets?businessLine=${encodeURIComponent(bl)}&pageSize=500`),
    enabled: key !== '' && bl !== '',
  });
  const models = useQuery({
    queryKey: ['models', key, bl],
    queryFn: () => apiCall<Page<RegisteredModel>>(key, `/models?businessLine=${encodeURIComponent(bl)}&pageSize=500`),
    enabled: key !== '' && bl !== '' && kind !== 'score',
  });
  const chosenSet = sets.data?.items.find((s) => s.name === form.sampleSet);
  const columns = chosenSet ? featureColumns(chosenSet) : [];
  const modelNames = [...new Set((models.data?.items ?? []).map((m) => m.name))];

  const submit = useMutation({
    mutationFn: (body: Record<string, unknown>) => apiCall<Experiment>(key, '/experiments', { method: 'POST', body }),
    onSuccess: (e) => {
      void queryClient.invalidateQueries({ queryKey: ['experiments'] });
      void navigate({ to: '/experiments/$id', params: { id: e.id } });
    },
    onError: (err) => {
      if (err instanceof ApiError && err.status === 400 && err.issues.length) {
        setIssues(placeIssues(err.issues, form));
        queueMicrotask(() => summaryRef.current?.focus());
      }
    },
  });

  const { byField, summary } = groupIssues(issues);
  const update = (patch: Partial<FormState>, fields: string[]) => {
    setState((s) => ({ ...s, ...patch }));
    // an edited field's issues go; the others stay until the next submit
    if (fields.some((f) => byField[f])) setIssues((all) => all.filter((i) => !i.field || !fields.includes(i.field)));
  };
  const setKnob = (id: string, v: KnobValue) => update({ knobs: { ...form.knobs, [id]: v } }, [id]);

  const onSubmit = (ev: FormEvent) => {
    ev.preventDefault();
    if (submit.isPending) return;
    submit.reset();
    const r = validateForm(form);
    if (!r.ok) {
      // checked with the api's own schema: nothing is sent
      setIssues(r.issues);
      queueMicrotask(() => summaryRef.current?.focus());
      return;
    }
    setIssues([]);
    submit.mutate(r.body);
  };

  const failure =
    submit.error && !(submit.error instanceof ApiError && submit.error.status === 400 && submit.error.issues.length);
  const labelOf = (field: string) => FIELD_LABELS[field] ?? KNOBS[kind].find((k) => k.id === field)?.label ?? field;
  const focusField = (field: string) => {
    const el = document.getElementById(fid(field)) ?? document.querySelector<HTMLElement>(`#${fid(field)}-group input`);
    el?.focus();
  };

  return (
    <form className="experiment-form" noValidate onSubmit={onSubmit} aria-label={`new ${kind} experiment`}>
      {issues.length ? (
        <div
          className="notice notice-error issue-summary"
          role="alert"
          tabIndex={-1}
          ref={summaryRef}
          aria-labelledby="issue-summary-title"
        >
          <strong id="issue-summary-title">
            Not submitted: {issues.length} problem{issues.length === 1 ? '' : 's'}
            {submit.error ? ' (from the server)' : ''}.
          </strong>
          <ul>
            {issues
              .filter((i) => i.field)
              .map((i, n) => (
                <li key={`f${n}`}>
                  <a
                    href={`#${fid(i.field!)}`}
                    onClick={(e) => {
                      e.preventDefault();
                      focusField(i.field!);
                    }}
                  >
                    {labelOf(i.field!)}
                  </a>
                  : {i.message}
                </li>
              ))}
            {summary.map((i, n) => (
              <li key={`s${n}`} className="issue-unplaced">
                <code>{i.path}</code>: {i.message}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {failure ? (
        <ErrorNotice
          title={
            submit.error instanceof ApiError && submit.error.status === 403
              ? 'Not allowed'
              : submit.error instanceof ApiError && submit.error.status === 404
                ? 'Not found'
                : 'Could not submit'
          }
          error={submit.error}
        />
      ) : null}
      {me.data && me.data.role === 'viewer' ? (
        <p className="notice" role="note">
          This key is a viewer: submitting needs an engineer or admin key.
        </p>
      ) : null}
      {lines.error ? <ErrorNotice title="Could not load business lines" error={lines.error} /> : null}

      <fieldset>
        <legend>Experiment</legend>
        <div className="form-grid">
          <Field id="name" label="Name" hint="optional, up to 200 characters" errors={byField.name}>
            <input
              {...described('name', true, byField.name)}
              type="text"
              value={form.name}
              onChange={(e) => update({ name: e.target.value }, ['name'])}
              autoComplete="off"
            />
          </Field>
          <Field
            id="businessLine"
            label="Business line"
            hint="the line it runs for (its sample sets and models)"
            errors={byField.businessLine}
          >
            <select
              {...described('businessLine', true, byField.businessLine)}
              value={bl}
              onChange={(e) => update({ businessLine: e.target.value, sampleSet: '', features: [], model: '' }, ['businessLine'])}
            >
              {bl && !lineNames.includes(bl) ? <option value={bl}>{bl}</option> : null}
              {lineNames.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </Field>
        </div>
      </fieldset>

      <fieldset>
        <legend>
          {kind === 'score' ? 'Sample set' : kind === 'add' ? 'Base model' : kind === 'multiply' ? 'Target' : 'Model'}
        </legend>
        {kind !== 'score' ? (
          <div className="radio-row" role="radiogroup" aria-label="model from">
            <label className="inline">
              <input
                type="radio"
                name="source"
                value="sampleSet"
                checked={form.source === 'sampleSet'}
                onChange={() => update({ source: 'sampleSet' }, ['model'])}
              />{' '}
              a sample set and its columns
            </label>
            <label className="inline">
              <input
                type="radio"
                name="source"
                value="model"
                checked={form.source === 'model'}
                onChange={() => update({ source: 'model' }, ['sampleSet', 'features', 'extraFeatures'])}
              />{' '}
              a registered model
            </label>
          </div>
        ) : null}
        {form.source === 'model' && kind !== 'score' ? (
          <Field
            id="model"
            label="Registered model"
            hint={
              models.data && !modelNames.length
                ? `no models registered in ${bl} yet`
                : 'its latest version: sample set, features, architecture, training'
            }
            errors={byField.model}
          >
            <select
              {...described('model', true, byField.model)}
              value={form.model}
              onChange={(e) => update({ model: e.target.value }, ['model'])}
            >
              <option value="">Choose a model…</option>
              {modelNames.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </Field>
        ) : (
          <>
            <Field
              id="sampleSet"
              label="Sample set"
              hint={
                sets.data && !sets.data.items.length
                  ? `no sample sets in ${bl} yet: import one first (abacus samples import)`
                  : `sample sets of ${bl || 'the line'}`
              }
              errors={byField.sampleSet}
            >
              <select
                {...described('sampleSet', true, byField.sampleSet)}
                value={form.sampleSet}
                onChange={(e) => {
                  const ss = sets.data?.items.find((s) => s.name === e.target.value);
                  // every feature column checked to start with
                  update({ sampleSet: e.target.value, features: ss ? featureColumns(ss).map((c) => c.name) : [] }, [
                    'sampleSet',
                    'features',
                  ]);
                }}
              >
                <option value="">Choose a sample set…</option>
                {(sets.data?.items ?? []).map((s) => (
                  <option key={s.id} value={s.name}>
                    {s.name} ({s.rowCount.toLocaleString('en-US')} rows, label {s.labelColumn})
                  </option>
                ))}
              </select>
            </Field>
            {chosenSet ? (
              <fieldset
                className="checks"
                id={`${fid('features')}-group`}
                aria-invalid={byField.features ? true : undefined}
                aria-describedby={[`${fid('features')}-hint`, byField.features ? `${fid('features')}-error` : '']
                  .join(' ')
                  .trim()}
              >
                <legend>Features</legend>
                <div className="check-grid">
                  {columns.map((c) => (
                    <label key={c.name} className="inline check">
                      <input
                        type="checkbox"
                        name="features"
                        value={c.name}
                        checked={form.features.includes(c.name)}
                        aria-invalid={byField.features ? true : undefined}
                        onChange={(e) =>
                          update(
                            {
                              features: e.target.checked
                                ? columns.map((x) => x.name).filter((n) => n === c.name || form.features.includes(n))
                                : form.features.filter((f) => f !== c.name),
                            },
                            ['features'],
                          )
                        }
                      />{' '}
                      {c.name} <span className="muted small">{c.kind}</span>
                    </label>
                  ))}
                </div>
                <div className="check-actions">
                  <button
                    type="button"
                    className="secondary small-button"
                    onClick={() => update({ features: columns.map((c) => c.name) }, ['features'])}
                  >
                    All
                  </button>
                  <button type="button" className="secondary small-button" onClick={() => update({ features: [] }, ['features'])}>
                    None
                  </button>
                </div>
                <span className="muted small hint" id={`${fid('features')}-hint`}>
                  columns of {chosenSet.name} (not the label, time or key columns)
                </span>
                <FieldErrors id="features" errors={byField.features} />
              </fieldset>
            ) : null}
            <Field
              id="extraFeatures"
              label="More features"
              hint="registered features joined from their tables by entity key, comma-separated (optional)"
              errors={byField.extraFeatures}
            >
              <input
                {...described('extraFeatures', true, byField.extraFeatures)}
                type="text"
                value={form.extraFeatures}
                onChange={(e) => update({ extraFeatures: e.target.value }, ['extraFeatures', 'features'])}
                autoComplete="off"
              />
            </Field>
          </>
        )}
      </fieldset>

      <fieldset>
        <legend>{kind} settings</legend>
        <div className="form-grid">
          {KNOBS[kind].map((f) => (
            <Knob key={f.id} field={f} value={form.knobs[f.id]} errors={byField[f.id]} onChange={(v) => setKnob(f.id, v)} />
          ))}
        </div>
      </fieldset>

      <details className="advanced" open={Boolean(form.advanced) || Boolean(byField.advanced) || summary.length > 0}>
        <summary>Advanced (JSON)</summary>
        <Field
          id="advanced"
          label="Advanced (JSON)"
          hint={
            <>
              merged over the fields above, e.g. <code>{'{"folds": 5, "model": {"training": {"epochs": 4}}}'}</code>; every key of
              the {kind} spec is described in the API docs
            </>
          }
          errors={byField.advanced}
        >
          <textarea
            {...described('advanced', true, byField.advanced)}
            rows={5}
            spellCheck={false}
            value={form.advanced}
            onChange={(e) => update({ advanced: e.target.value }, ['advanced'])}
          />
        </Field>
      </details>

      <p className="form-actions">
        <button type="submit" disabled={submit.isPending}>
          {submit.isPending ? 'Submitting…' : `Launch ${kind} experiment`}
        </button>
      </p>
    </form>
  );
}

function Knob({
  field: f,
  value,
  errors,
  onChange,
}: {
  field: KnobField;
  value: KnobValue | undefined;
  errors?: string[];
  onChange: (v: KnobValue) => void;
}) {
  if (f.type === 'checkbox') {
    return (
      <div className="field">
        <label className="inline" htmlFor={fid(f.id)}>
          <input
            {...described(f.id, true, errors)}
            type="checkbox"
            checked={value === true}
            onChange={(e) => onChange(e.target.checked)}
          />{' '}
          {f.label}
        </label>
        <span className="muted small hint" id={`${fid(f.id)}-hint`}>
          {f.hint}
        </span>
        <FieldErrors id={f.id} errors={errors} />
      </div>
    );
  }
  if (f.type === 'checks') {
    const chosen = Array.isArray(value) ? value : [];
    return (
      <fieldset
        className="checks field"
        id={`${fid(f.id)}-group`}
        aria-invalid={errors?.length ? true : undefined}
        aria-describedby={[`${fid(f.id)}-hint`, errors?.length ? `${fid(f.id)}-error` : ''].join(' ').trim()}
      >
        <legend>{f.label}</legend>
        {(f.options ?? []).map((o, i) => (
          <label key={o} className="inline check">
            <input
              type="checkbox"
              id={i === 0 ? fid(f.id) : undefined}
              name={f.id}
              value={o}
              checked={chosen.includes(o)}
              aria-invalid={errors?.length ? true : undefined}
              onChange={(e) =>
                onChange(
                  e.target.checked
                    ? (f.options ?? []).filter((x) => x === o || chosen.includes(x))
                    : chosen.filter((x) => x !== o),
                )
              }
            />{' '}
            {o}
          </label>
        ))}
        <span className="muted small hint" id={`${fid(f.id)}-hint`}>
          {f.hint}
        </span>
        <FieldErrors id={f.id} errors={errors} />
      </fieldset>
    );
  }
  return (
    <Field id={f.id} label={f.label} hint={f.hint} errors={errors}>
      <input
        {...described(f.id, true, errors)}
        type={f.type === 'number' ? 'number' : 'text'}
        step={f.type === 'number' ? (f.step ?? '1') : undefined}
        inputMode={f.type === 'number' ? 'decimal' : undefined}
        value={typeof value === 'string' ? value : ''}
        onChange={(e) => onChange(e.target.value)}
        autoComplete="off"
      />
    </Field>
  );
}
