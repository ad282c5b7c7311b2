import { useRef, useState, type FormEvent } from 'react';
import { Link } from '@tanstack/react-router';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError, apiCall, type FeatureTable, type SampleSet } from '../lib/api';
import { useKey } from '../lib/auth';
import { placeFieldIssues } from '../lib/catalog';
import { formatCount, formatDateTime, summarizeKinds } from '../lib/format';
import { UploadCancelled } from '../lib/upload';
import { ErrorNotice, Loading, TableWrap } from '../components';
import { FieldMessages, UploadProgress, ariaFor, useUpload } from '../catalog-components';

/** Entity-keyed feature tables of the lines the key may read, grouped by line. */
export function FeatureTablesSection({ line }: { line?: string }) {
  const key = useKey();
  const tables = useQuery({
    queryKey: ['feature-tables', key, line ?? ''],
    queryFn: () => apiCall<FeatureTable[]>(key, `/feature-tables${line ? `?businessLine=${encodeURIComponent(line)}` : ''}`),
    enabled: key !== '',
  });
  const groups = new Map<string, FeatureTable[]>();
  for (const t of tables.data ?? []) groups.set(t.businessLine, [...(groups.get(t.businessLine) ?? []), t]);
  return (
    <section aria-labelledby="feature-tables">
      <h2 id="feature-tables">Feature tables</h2>
      <p className="muted">
        Entity-keyed tables (user, item, context) joined onto samples by their key; their columns are registered{' '}
        <Link to="/features">features</Link>. Upload one from the features page.
      </p>
      {tables.error ? <ErrorNotice title="Could not load feature tables" error={tables.error} /> : null}
      {tables.isPending ? <Loading what="feature tables" /> : null}
      {tables.data && tables.data.length === 0 ? (
        <div className="empty" role="status">
          <p>
            No feature tables yet —{' '}
            <Link to="/features" hash="register">
              upload one
            </Link>{' '}
            or run the demo.
          </p>
        </div>
      ) : null}
      {[...groups.entries()]
        .sort((a, b) => a[0].localeCompare(b[0]))
        .map(([l, items]) => (
          <div key={l}>
            <h3>
              {l} <span className="muted h-sub">business line</span>
            </h3>
            <TableWrap label={`feature tables of ${l}`}>
              <table className="list feature-tables">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Entity key</th>
                    <th scope="col">Time column</th>
                    <th scope="col">Rows</th>
                    <th scope="col">Columns</th>
                    <th scope="col">Owner</th>
                    <th scope="col">Imported</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((t) => (
                    <tr key={t.id} data-feature-table={t.name}>
                      <td className="nowrap">
                        <Link to="/features" search={{ line: t.businessLine }}>
                          {t.name}
                        </Link>
                      </td>
                      <td>
                        <code>{t.entityKey}</code>
                      </td>
                      <td>{t.timeColumn ? <code>{t.timeColumn}</code> : 'none (one row per key)'}</td>
                      <td className="num">{formatCount(t.rowCount)}</td>
                      <td className="wrap">
                        {t.schema.length}: {summarizeKinds(t.schema)}
                        <div className="muted small">{t.schema.map((c) => c.name).join(', ')}</div>
                      </td>
                      <td>{t.owner}</td>
                      <td className="nowrap">{formatDateTime(t.createdAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          </div>
        ))}
    </section>
  );
}

const SET_FIELDS = ['file', 'name', 'businessLine', 'label', 'positive', 'time', 'keys', 'shareWith', 'labelSemantics'] as const;

/** Upload a CSV or Parquet sample set into the DataBank, with progress and a cancel button. */
export function UploadSampleSet({ lineOptions }: { lineOptions: string[] }) {
  const key = useKey();
  const client = useQueryClient();
  const upload = useUpload();
  const fileRef = useRef<HTMLInputElement>(null);
  const [v, setV] = useState<Record<(typeof SET_FIELDS)[number], string>>({
    file: '',
    name: '',
    businessLine: '',
    label: '',
    positive: '',
    time: '',
    keys: '',
    shareWith: '',
    labelSemantics: 'exposure->click',
  });
  const [issues, setIssues] = useState<ReturnType<typeof placeFieldIssues>>({ byField: {}, summary: [] });
  const [done, setDone] = useState<SampleSet | null>(null);
  const busy = upload.state.phase === 'sending' || upload.state.phase === 'processing';
  const line = v.businessLine || lineOptions[0] || '';
  const set = (k: (typeof SET_FIELDS)[number]) => (e: { target: { value: string } }) => setV({ ...v, [k]: e.target.value });

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setDone(null);
    const file = fileRef.current?.files?.[0];
    if (!file) {
      setIssues({ byField: { file: ['choose a CSV or Parquet file'] }, summary: [] });
      return;
    }
    const form = new FormData();
    form.append('name', v.name.trim());
    form.append('businessLine', line);
    form.append('label', v.label.trim());
    for (const k of ['positive', 'time', 'keys', 'shareWith', 'labelSemantics'] as const)
      if (v[k].trim()) form.append(k, v[k].trim());
    form.append('file', file, file.name);
    setIssues({ byField: {}, summary: [] });
    try {
      const out = await upload.start<SampleSet>(key, '/sample-sets', form);
      setDone(out);
      void client.invalidateQueries({ queryKey: ['sample-sets'] });
    } catch (err) {
      if (err instanceof UploadCancelled) return;
      setIssues(
        err instanceof ApiError && err.issues.length
          ? placeFieldIssues(err.issues, SET_FIELDS)
          : { byField: {}, summary: [{ path: '', message: err instanceof Error ? err.message : String(err) }] },
      );
    }
  }

  const by = issues.byField;
  const text = (k: (typeof SET_FIELDS)[number], label: string, hint?: string) => (
    <div className="field">
      <label htmlFor={`set-${k}`}>{label}</label>
      <input
        id={`set-${k}`}
        value={v[k]}
        onChange={set(k)}
        autoComplete="off"
        {...ariaFor(`set-${k}`, by[k], hint ? `set-${k}-help` : undefined)}
      />
      {hint ? (
        <span id={`set-${k}-help`} className="muted small hint">
          {hint}
        </span>
      ) : null}
      <FieldMessages id={`set-${k}-error`} messages={by[k]} />
    </div>
  );
  return (
    <section aria-labelledby="upload-set" className="register">
      <h2 id="upload-set">Upload a sample set</h2>
      <form className="register-form" onSubmit={submit} aria-label="upload a sample set" noValidate>
        <p className="muted">
          A labelled table (CSV or Parquet) of impressions: a label column, optionally a time column and key columns. Same as{' '}
          <code>abacus samples import</code>.
        </p>
        {issues.summary.length ? (
          <div className="notice notice-error" role="alert">
            <strong>The sample set was not stored:</strong>{' '}
            {issues.summary.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ')}
          </div>
        ) : null}
        <div className="form-grid">
          <div className="field">
            <label htmlFor="set-file">File (CSV or Parquet)</label>
            <input id="set-file" ref={fileRef} type="file" accept=".csv,.parquet" {...ariaFor('set-file', by.file)} />
            <FieldMessages id="set-file-error" messages={by.file} />
          </div>
          {text('name', 'Set name')}
          <div className="field">
            <label htmlFor="set-businessLine">Line of the new set</label>
            <select
              id="set-businessLine"
              value={line}
              onChange={set('businessLine')}
              {...ariaFor('set-businessLine', by.businessLine)}
            >
              {lineOptions.map((l) => (
                <option key={l} value={l}>
                  {l}
                </option>
              ))}
            </select>
            <FieldMessages id="set-businessLine-error" messages={by.businessLine} />
          </div>
          {text('label', 'Label column')}
          {text('positive', 'Positive label value (optional)', 'needed unless the label is 0/1 or true/false')}
          {text('time', 'Time column (optional)')}
          {text('keys', 'Key columns (optional)', 'comma-separated, e.g. user_id,item_id')}
          {text('shareWith', 'Share with lines (optional)', 'comma-separated line names, or * for all; empty: private')}
          {text('labelSemantics', 'Meaning of the label', 'event->outcome, e.g. exposure->click')}
        </div>
        <div className="form-actions">
          <button type="submit" disabled={busy}>
            Upload sample set
          </button>
        </div>
        <UploadProgress state={upload.state} onCancel={upload.cancel} label="sample set upload" />
        {done ? (
          <div className="notice notice-ok" role="status">
            Stored{' '}
            <Link to="/data/$id" params={{ id: done.id }}>
              {done.businessLine}/{done.name}
            </Link>{' '}
            ({formatCount(done.rowCount)} rows).
          </div>
        ) : null}
      </form>
    </section>
  );
}

const REF_FIELDS = [
  'url',
  'name',
  'businessLine',
  'label',
  'positive',
  'time',
  'keys',
  'shareWith',
  'labelSemantics',
  'partitions',
] as const;
type RefField = (typeof REF_FIELDS)[number] | 'partitionColumn' | 'from' | 'to';

const splitList = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** Register a Parquet set where it is kept (S3-compatible store or shared path), without copying it. */
export function RegisterSampleSet({ lineOptions }: { lineOptions: string[] }) {
  const key = useKey();
  const client = useQueryClient();
  const [v, setV] = useState<Record<RefField, string>>({
    url: '',
    name: '',
    businessLine: '',
    label: '',
    positive: '',
    time: '',
    keys: '',
    shareWith: '',
    labelSemantics: 'exposure->click',
    partitions: '',
    partitionColumn: '',
    from: '',
    to: '',
  });
  const [issues, setIssues] = useState<ReturnType<typeof placeFieldIssues>>({ byField: {}, summary: [] });
  const [done, setDone] = useState<SampleSet | null>(null);
  const [busy, setBusy] = useState(false);
  const line = v.businessLine || lineOptions[0] || '';
  const set = (k: RefField) => (e: { target: { value: string } }) => setV({ ...v, [k]: e.target.value });

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setDone(null);
    setIssues({ byField: {}, summary: [] });
    const body: Record<string, unknown> = { url: v.url.trim(), name: v.name.trim(), businessLine: line, label: v.label.trim() };
    for (const k of ['positive', 'time', 'labelSemantics'] as const) if (v[k].trim()) body[k] = v[k].trim();
    if (v.keys.trim()) body.keys = splitList(v.keys);
    if (v.shareWith.trim()) body.shareWith = splitList(v.shareWith);
    if (v.partitionColumn.trim()) {
      body.partitions = {
        column: v.partitionColumn.trim(),
        ...(v.from.trim() ? { from: v.from.trim() } : {}),
        ...(v.to.trim() ? { to: v.to.trim() } : {}),
      };
    }
    setBusy(true);
    try {
      const out = await apiCall<SampleSet>(key, '/sample-sets/register', { method: 'POST', body });
      setDone(out);
      void client.invalidateQueries({ queryKey: ['sample-sets'] });
    } catch (err) {
      setIssues(
        err instanceof ApiError && err.issues.length
          ? placeFieldIssues(err.issues, REF_FIELDS)
          : { byField: {}, summary: [{ path: '', message: err instanceof Error ? err.message : String(err) }] },
      );
    } finally {
      setBusy(false);
    }
  }

  const by = issues.byField;
  const text = (k: RefField, label: string, hint?: string, errors = by[k as (typeof REF_FIELDS)[number]]) => (
    <div className="field">
      <label htmlFor={`ref-${k}`}>{label}</label>
      <input
        id={`ref-${k}`}
        value={v[k]}
        onChange={set(k)}
        autoComplete="off"
        {...ariaFor(`ref-${k}`, errors, hint ? `ref-${k}-help` : undefined)}
      />
      {hint ? (
        <span id={`ref-${k}-help`} className="muted small hint">
          {hint}
        </span>
      ) : null}
      <FieldMessages id={`ref-${k}-error`} messages={errors} />
    </div>
  );
  return (
    <section aria-labelledby="register-set" className="register">
      <h2 id="register-set">Register a sample set by reference</h2>
      <form className="register-form" onSubmit={submit} aria-label="register a sample set by reference" noValidate>
        <p className="muted">
          Parquet files left where they are kept — an S3-compatible bucket or a shared path every worker host mounts — and read by
          the workers through their caches. Hive folders such as <code>dt=2026-11-20/</code> become columns. Same as{' '}
          <code>abacus samples register</code>.
        </p>
        {issues.summary.length ? (
          <div className="notice notice-error" role="alert">
            <strong>The sample set was not registered:</strong>{' '}
            {issues.summary.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ')}
          </div>
        ) : null}
        <div className="form-grid">
          {text('url', 'Location', 's3://bucket/prefix/ or file:///shared/path/')}
          {text('name', "Registered set's name")}
          <div className="field">
            <label htmlFor="ref-businessLine">Registered set's line</label>
            <select
              id="ref-businessLine"
              value={line}
              onChange={set('businessLine')}
              {...ariaFor('ref-businessLine', by.businessLine)}
            >
              {lineOptions.map((l) => (
                <option key={l} value={l}>
                  {l}
                </option>
              ))}
            </select>
            <FieldMessages id="ref-businessLine-error" messages={by.businessLine} />
          </div>
          {text('label', 'Label (0/1 or true/false)')}
          {text('time', 'Event time (optional)')}
          {text('keys', 'Keys (optional)', 'comma-separated columns, e.g. user_id,item_id')}
          {text('shareWith', 'Lines it is shared with (optional)', 'comma-separated line names, or * for all; empty: private')}
          {text('labelSemantics', 'Label meaning', 'event->outcome, e.g. exposure->click')}
          {text('partitionColumn', 'Partition column (optional)', 'e.g. dt, to take a range of its folders', by.partitions)}
          {text('from', 'From (inclusive, optional)')}
          {text('to', 'To (inclusive, optional)')}
        </div>
        <div className="form-actions">
          <button type="submit" disabled={busy}>
            {busy ? 'Registering…' : 'Register sample set'}
          </button>
        </div>
        {done ? (
          <div className="notice notice-ok" role="status">
            Registered{' '}
            <Link to="/data/$id" params={{ id: done.id }}>
              {done.businessLine}/{done.name}
            </Link>{' '}
            ({formatCount(done.rowCount)} rows, not copied).
          </div>
        ) : null}
      </form>
    </section>
  );
}
