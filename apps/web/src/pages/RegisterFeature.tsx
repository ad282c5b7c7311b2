import { useRef, useState, type FormEvent } from 'react';
import { Link } from '@tanstack/react-router';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError, apiCall, type Feature, type FeatureTable } from '../lib/api';
import { useKey } from '../lib/auth';
import { FEATURE_KINDS, placeFieldIssues } from '../lib/catalog';
import { UploadCancelled } from '../lib/upload';
import { FieldMessages, UploadProgress, ariaFor, useUpload } from '../catalog-components';

const TABLE_FIELDS = ['file', 'name', 'businessLine', 'entityKey', 'time'] as const;
const COLUMN_FIELDS = ['name', 'businessLine', 'kind', 'featureTableId', 'sourceColumn', 'description'] as const;

type Issues = ReturnType<typeof placeFieldIssues>;
const NO_ISSUES: Issues = { byField: {}, summary: [] };

/** An error as field messages: a 400's issues by field, anything else as one summary line. */
function issuesFrom(err: unknown, fields: readonly string[]): Issues {
  if (err instanceof ApiError && err.issues.length) return placeFieldIssues(err.issues, fields);
  return { byField: {}, summary: [{ path: '', message: err instanceof Error ? err.message : String(err) }] };
}

function Summary({ issues, title }: { issues: Issues; title: string }) {
  if (!issues.summary.length) return null;
  return (
    <div className="notice notice-error" role="alert">
      <strong>{title}:</strong> {issues.summary.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ')}
    </div>
  );
}

/** Register a candidate feature: upload a feature table (its columns become features), or name an existing column. */
export function RegisterFeature({ lineOptions }: { lineOptions: string[] }) {
  const [mode, setMode] = useState<'table' | 'column'>('table');
  return (
    <section id="register" aria-labelledby="register-title" className="register">
      <h2 id="register-title">Register a candidate feature</h2>
      <fieldset className="radio-row">
        <legend>How</legend>
        <label className="inline">
          <input type="radio" name="register-mode" checked={mode === 'table'} onChange={() => setMode('table')} /> Upload a
          feature table
        </label>
        <label className="inline">
          <input type="radio" name="register-mode" checked={mode === 'column'} onChange={() => setMode('column')} /> From an
          existing column
        </label>
      </fieldset>
      {mode === 'table' ? <UploadTableForm lineOptions={lineOptions} /> : <ColumnForm lineOptions={lineOptions} />}
    </section>
  );
}

function UploadTableForm({ lineOptions }: { lineOptions: string[] }) {
  const key = useKey();
  const client = useQueryClient();
  const upload = useUpload();
  const fileRef = useRef<HTMLInputElement>(null);
  const [name, setName] = useState('');
  const [line, setLine] = useState('');
  const [entityKey, setEntityKey] = useState('');
  const [time, setTime] = useState('');
  const [issues, setIssues] = useState<Issues>(NO_ISSUES);
  const [done, setDone] = useState<{ table: FeatureTable; features: Feature[]; warnings?: string[] } | null>(null);
  const busy = upload.state.phase === 'sending' || upload.state.phase === 'processing';
  const chosenLine = line || lineOptions[0] || '';

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setDone(null);
    const file = fileRef.current?.files?.[0];
    if (!file) {
      setIssues({ byField: { file: ['choose a CSV or Parquet file'] }, summary: [] });
      return;
    }
    const form = new FormData();
    form.append('name', name.trim());
    form.append('businessLine', chosenLine);
    form.append('entityKey', entityKey.trim());
    if (time.trim()) form.append('time', time.trim());
    form.append('file', file, file.name);
    setIssues(NO_ISSUES);
    try {
      const out = await upload.start<{ table: FeatureTable; features: Feature[]; warnings?: string[] }>(
        key,
        '/feature-tables',
        form,
      );
      setDone(out);
      void client.invalidateQueries({ queryKey: ['features'] });
      void client.invalidateQueries({ queryKey: ['feature-tables'] });
    } catch (err) {
      if (!(err instanceof UploadCancelled)) setIssues(issuesFrom(err, TABLE_FIELDS));
    }
  }

  const by = issues.byField;
  return (
    <form className="register-form" onSubmit={submit} aria-label="upload a feature table" noValidate>
      <p className="muted">
        Every column but the entity key and the time becomes a registered feature of the line (numeric, categorical or multi-id,
        read from the file), joined onto samples by the key. Same as <code>abacus features import</code>.
      </p>
      <Summary issues={issues} title="The table was not registered" />
      <div className="form-grid">
        <div className="field">
          <label htmlFor="table-file">File (CSV or Parquet)</label>
          <input
            id="table-file"
            ref={fileRef}
            type="file"
            accept=".csv,.parquet"
            name="file"
            {...ariaFor('table-file', by.file)}
          />
          <FieldMessages id="table-file-error" messages={by.file} />
        </div>
        <div className="field">
          <label htmlFor="table-name">Table name</label>
          <input
            id="table-name"
            value={name}
            onChange={(e) => setName(e.target.value)}
            autoComplete="off"
            {...ariaFor('table-name', by.name)}
          />
          <FieldMessages id="table-name-error" messages={by.name} />
        </div>
        <div className="field">
          <label htmlFor="table-line">Line to register in</label>
          <select
            id="table-line"
            value={chosenLine}
            onChange={(e) => setLine(e.target.value)}
            {...ariaFor('table-line', by.businessLine)}
          >
            {lineOptions.map((l) => (
              <option key={l} value={l}>
                {l}
              </option>
            ))}
          </select>
          <FieldMessages id="table-line-error" messages={by.businessLine} />
        </div>
        <div className="field">
          <label htmlFor="table-key">Entity key column</label>
          <input
            id="table-key"
            value={entityKey}
            onChange={(e) => setEntityKey(e.target.value)}
            placeholder="e.g. user_id"
            autoComplete="off"
            {...ariaFor('table-key', by.entityKey)}
          />
          <FieldMessages id="table-key-error" messages={by.entityKey} />
        </div>
        <div className="field">
          <label htmlFor="table-time">Time column (optional)</label>
          <input
            id="table-time"
            value={time}
            onChange={(e) => setTime(e.target.value)}
            autoComplete="off"
            {...ariaFor('table-time', by.time, 'table-time-help')}
          />
          <span id="table-time-help" className="muted small hint">
            for daily snapshots: joined point in time
          </span>
          <FieldMessages id="table-time-error" messages={by.time} />
        </div>
      </div>
      <div className="form-actions">
        <button type="submit" disabled={busy}>
          Upload and register
        </button>
      </div>
      <UploadProgress state={upload.state} onCancel={upload.cancel} label="feature table upload" />
      {done ? (
        <div className="notice notice-ok" role="status">
          Registered table <strong>{done.table.name}</strong> ({done.table.rowCount.toLocaleString('en-US')} rows) and{' '}
          {done.features.length} feature{done.features.length === 1 ? '' : 's'}:{' '}
          {done.features.map((f, i) => (
            <span key={f.id}>
              {i ? ', ' : ''}
              <Link to="/features/$id" params={{ id: f.id }}>
                {f.name}
              </Link>
            </span>
          ))}
          {done.warnings?.length ? <div className="muted">{done.warnings.join('; ')}</div> : null}
        </div>
      ) : null}
    </form>
  );
}

function ColumnForm({ lineOptions }: { lineOptions: string[] }) {
  const key = useKey();
  const client = useQueryClient();
  const [name, setName] = useState('');
  const [line, setLine] = useState('');
  const [kind, setKind] = useState<string>('numeric');
  const [tableId, setTableId] = useState('');
  const [column, setColumn] = useState('');
  const [description, setDescription] = useState('');
  const [issues, setIssues] = useState<Issues>(NO_ISSUES);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<Feature | null>(null);
  const chosenLine = line || lineOptions[0] || '';
  const tables = useQuery({
    queryKey: ['feature-tables', key, chosenLine],
    queryFn: () => apiCall<FeatureTable[]>(key, `/feature-tables?businessLine=${encodeURIComponent(chosenLine)}`),
    enabled: key !== '' && chosenLine !== '',
  });
  const table = tables.data?.find((t) => t.id === tableId);
  const columns = table ? table.schema.map((c) => c.name).filter((c) => c !== table.entityKey && c !== table.timeColumn) : [];

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setDone(null);
    setBusy(true);
    const body: Record<string, unknown> = { name: name.trim(), businessLine: chosenLine, kind };
    if (tableId) body.featureTableId = tableId;
    if (column.trim()) body.sourceColumn = column.trim();
    if (description.trim()) body.description = description.trim();
    try {
      const f = await apiCall<Feature>(key, '/features', { method: 'POST', body });
      setIssues(NO_ISSUES);
      setDone(f);
      void client.invalidateQueries({ queryKey: ['features'] });
    } catch (err) {
      setIssues(issuesFrom(err, COLUMN_FIELDS));
    } finally {
      setBusy(false);
    }
  }

  const by = issues.byField;
  return (
    <form className="register-form" onSubmit={submit} aria-label="register a feature from a column" noValidate>
      <p className="muted">
        A column of one of the line&apos;s feature tables (joined by its key), or, with no table, a column of the line&apos;s
        sample sets.
      </p>
      <Summary issues={issues} title="The feature was not registered" />
      <div className="form-grid">
        <div className="field">
          <label htmlFor="col-name">Feature name</label>
          <input
            id="col-name"
            value={name}
            onChange={(e) => setName(e.target.value)}
            autoComplete="off"
            {...ariaFor('col-name', by.name)}
          />
          <FieldMessages id="col-name-error" messages={by.name} />
        </div>
        <div className="field">
          <label htmlFor="col-line">Line to register in</label>
          <select
            id="col-line"
            value={chosenLine}
            onChange={(e) => {
              setLine(e.target.value);
              setTableId('');
            }}
            {...ariaFor('col-line', by.businessLine)}
          >
            {lineOptions.map((l) => (
              <option key={l} value={l}>
                {l}
              </option>
            ))}
          </select>
          <FieldMessages id="col-line-error" messages={by.businessLine} />
        </div>
        <div className="field">
          <label htmlFor="col-kind">Kind</label>
          <select id="col-kind" value={kind} onChange={(e) => setKind(e.target.value)} {...ariaFor('col-kind', by.kind)}>
            {FEATURE_KINDS.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
          <FieldMessages id="col-kind-error" messages={by.kind} />
        </div>
        <div className="field">
          <label htmlFor="col-table">Feature table</label>
          <select
            id="col-table"
            value={tableId}
            onChange={(e) => setTableId(e.target.value)}
            {...ariaFor('col-table', by.featureTableId)}
          >
            <option value="">none: a sample-set column</option>
            {(tables.data ?? []).map((t) => (
              <option key={t.id} value={t.id}>
                {t.name} (key {t.entityKey})
              </option>
            ))}
          </select>
          <FieldMessages id="col-table-error" messages={by.featureTableId} />
        </div>
        <div className="field">
          <label htmlFor="col-column">Source column (default: the name)</label>
          <input
            id="col-column"
            value={column}
            onChange={(e) => setColumn(e.target.value)}
            list="col-column-options"
            autoComplete="off"
            {...ariaFor('col-column', by.sourceColumn)}
          />
          <datalist id="col-column-options">
            {columns.map((c) => (
              <option key={c} value={c} />
            ))}
          </datalist>
          <FieldMessages id="col-column-error" messages={by.sourceColumn} />
        </div>
        <div className="field">
          <label htmlFor="col-description">Description (optional)</label>
          <input
            id="col-description"
            value={description}
            onChange={(e) => setDescription(e.target.value)}
            autoComplete="off"
            {...ariaFor('col-description', by.description)}
          />
          <FieldMessages id="col-description-error" messages={by.description} />
        </div>
      </div>
      <div className="form-actions">
        <button type="submit" disabled={busy}>
          Register feature
        </button>
      </div>
      {done ? (
        <div className="notice notice-ok" role="status">
          Registered{' '}
          <Link to="/features/$id" params={{ id: done.id }}>
            {done.businessLine}/{done.name}
          </Link>
          .
        </div>
      ) : null}
    </form>
  );
}
