import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type BusinessLine, type EmbeddingDelta, type Page, type SampleSet, type SharedEmbedding } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatCount, formatRate, formatSharing, formatTimeRange, formatVersion, summarizeKinds } from '../lib/format';
import {
  BANK_PAGE_SIZE,
  hasFilters,
  parseBankSearch,
  parseColumns,
  sampleSetQuery,
  validateBankFilters,
  type BankSearch,
} from '../lib/search';
import { ErrorNotice, Loading, Pager } from '../components';
import { ListCount, ListTable, type Column } from '../list';
import { FeatureTablesSection, RegisterSampleSet, UploadSampleSet } from './DataUploads';

/** Label meanings offered in the filter (any other event->outcome can be typed). */
const KNOWN_SEMANTICS = ['exposure->click', 'click->order', 'exposure->order'];

/** The DataBank: sample sets of every line the key may read (its own and those shared with them). */
export function DataPage({ search }: { search: BankSearch }) {
  const key = useKey();
  const q = sampleSetQuery(search);
  const sets = useQuery({
    queryKey: ['sample-sets', key, q],
    queryFn: () => apiCall<Page<SampleSet>>(key, `/sample-sets?${q}`),
    enabled: key !== '',
    placeholderData: (prev) => prev,
  });
  const lines = useQuery({
    queryKey: ['business-lines', key],
    queryFn: () => apiCall<BusinessLine[]>(key, '/business-lines'),
    enabled: key !== '',
    staleTime: 60_000,
  });
  const lineOptions = [
    ...new Set([
      ...(lines.data ?? []).map((l) => l.name),
      ...(sets.data?.items ?? []).map((s) => s.businessLine),
      ...(search.line ? [search.line] : []),
    ]),
  ].sort();
  const semanticsOptions = [...new Set([...KNOWN_SEMANTICS, ...(sets.data?.items ?? []).map((s) => s.labelSemantics)])].sort();

  const groups = new Map<string, SampleSet[]>();
  for (const s of sets.data?.items ?? []) groups.set(s.businessLine, [...(groups.get(s.businessLine) ?? []), s]);

  return (
    <>
      <h1>Data</h1>
      <p className="muted">
        The DataBank: sample sets of your business lines and those other lines share with them. Same view in the CLI:{' '}
        <code>abacus bank list</code>.
      </p>
      <Filters key={JSON.stringify(search)} search={search} lineOptions={lineOptions} semanticsOptions={semanticsOptions} />
      {sets.error ? <ErrorNotice title="Could not load sample sets" error={sets.error} /> : null}
      {sets.isPending ? <Loading what="sample sets" /> : null}
      {sets.data ? (
        <ListCount
          total={sets.data.total}
          noun={['sample set', 'sample sets']}
          filtered={hasFilters(search)}
          clear={
            <Link to="/data" search={{}}>
              Clear the filters
            </Link>
          }
          empty={
            <p>
              <strong>No sample sets yet</strong> — upload one (the form below, or{' '}
              <code>abacus samples import data.csv --name my-set --domain feed --label click</code>) or run the demo (
              <code>bash scripts/quickstart.sh</code>, or <code>abacus sim</code> then <code>abacus demo</code>).
            </p>
          }
        />
      ) : null}
      {sets.data && sets.data.items.length > 0 ? (
        <>
          {[...groups.entries()]
            .sort((a, b) => a[0].localeCompare(b[0]))
            .map(([line, items]) => (
              <section key={line} aria-labelledby={`line-${line}`}>
                <h2 id={`line-${line}`}>
                  {line} <span className="muted h-sub">business line</span>
                </h2>
                <SampleSetTable items={items} line={line} />
              </section>
            ))}
          {/* the page of the rows shown: while the next page loads, the previous one stays up */}
          <Pager to="/data" page={sets.data.page} pageSize={BANK_PAGE_SIZE} total={sets.data.total} />
        </>
      ) : null}
      <Embeddings line={search.line} />
      <FeatureTablesSection line={search.line} />
      <UploadSampleSet lineOptions={(lines.data ?? []).map((l) => l.name)} />
      <RegisterSampleSet lineOptions={(lines.data ?? []).map((l) => l.name)} />
    </>
  );
}

const EMBEDDING_COLUMNS: Column<SharedEmbedding>[] = [
  { header: 'Embedding', cell: (e) => <code>{e.ref}</code>, className: 'nowrap' },
  { header: 'Line', cell: (e) => e.businessLine },
  { header: 'Dim', cell: (e) => e.dim, className: 'num' },
  {
    header: 'Slots',
    className: 'wrap',
    cell: (e) => (
      <>
        {e.slots.length}
        <div className="muted small">{e.slots.map((s) => s.name).join(', ')}</div>
      </>
    ),
  },
  {
    header: 'Learned on (data version)',
    className: 'wrap',
    cell: (e) =>
      e.sources.map((s) => (
        <div key={`${s.businessLine}/${s.name}`}>
          {s.businessLine}/{s.name} <code className="small">{formatVersion(s.dataVersion)}</code>
        </div>
      )),
  },
  {
    header: 'Sharing',
    className: 'wrap',
    cell: (e) => (
      <>
        {formatSharing(e.sharingPolicy.shareWith)}
        <div className="muted small">updatable by {updatable(e.sharingPolicy.updatableBy)}</div>
      </>
    ),
  },
  {
    header: 'Versions and checks',
    className: 'wrap lineage',
    cell: (e) => <Lineage e={e} />,
  },
  {
    header: 'Used by',
    className: 'wrap',
    cell: (e) => (e.usedBy?.length ? e.usedBy.map((u) => `${u.businessLine} (${u.experiments})`).join(', ') : '—'),
  },
  {
    header: 'Experiment',
    cell: (e) =>
      e.experimentId ? (
        <Link to="/experiments/$id" params={{ id: e.experimentId }}>
          open
        </Link>
      ) : (
        '—'
      ),
  },
];

const updatable = (lines: string[] | undefined) =>
  !lines?.length ? 'the owner line only' : lines.includes('*') ? 'every line' : lines.join(', ');
const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(4)}`;
const withInterval = (d: EmbeddingDelta) => `${signed(d.delta)} [${signed(d.ciLow)}, ${signed(d.ciHigh)}]`;

/** A version's parent and who trained it, what it brought that line, and the owner's check of it. */
function Lineage({ e }: { e: SharedEmbedding }) {
  const p = e.provenance ?? {};
  if (!p.parent) return <span className="muted">first version{p.strategy ? ` (${p.strategy})` : ''}</span>;
  return (
    <>
      <div>
        from <code>{p.parent}</code> by {p.updatedBy ?? '?'}
      </div>
      {p.updateResult ? (
        <div className="small" data-update-verdict={p.updateResult.verdict}>
          for {p.updateResult.line}: validation ΔAUC {withInterval(p.updateResult.validation)} ({p.updateResult.verdict})
        </div>
      ) : null}
      {p.ownerCheck ? (
        <div
          className={`small owner-check owner-check-${p.ownerCheck.verdict.replace(/ /g, '-')}`}
          data-owner-check={p.ownerCheck.verdict}
        >
          owner {p.ownerCheck.line}: <strong>{p.ownerCheck.verdict}</strong>, validation ΔAUC {withInterval(p.ownerCheck)} over{' '}
          {p.ownerCheck.parent}
        </div>
      ) : (
        <div className="small muted">
          owner check: {p.updatedBy === e.businessLine ? 'none needed (the owner updated it)' : 'not yet'}
        </div>
      )}
    </>
  );
}

/** Shared embeddings (name@version) learned by multiply experiments, of the lines the key may read. */
function Embeddings({ line }: { line?: string }) {
  const key = useKey();
  const q = new URLSearchParams({ pageSize: '100', ...(line ? { businessLine: line } : {}) }).toString();
  const list = useQuery({
    queryKey: ['embeddings', key, q],
    queryFn: () => apiCall<Page<SharedEmbedding>>(key, `/embeddings?${q}`),
    enabled: key !== '',
  });
  return (
    <section aria-labelledby="embeddings">
      <h2 id="embeddings">Shared embeddings</h2>
      <p className="muted">
        Embedding tables learned on pooled samples by <code>multiply</code> experiments; start a model from one with{' '}
        <code>{'"init": { "embedding": "name@version" }'}</code>, download one with <code>abacus embeddings export REF</code>.
      </p>
      {list.error ? <ErrorNotice title="Could not load shared embeddings" error={list.error} /> : null}
      {list.isPending ? <Loading what="shared embeddings" /> : null}
      {list.data && list.data.items.length === 0 ? (
        <div className="empty" role="status">
          <p>
            No shared embeddings yet — a <code>multiply</code> experiment with the <code>shared_embedding</code> strategy creates
            them (e.g. <code>abacus experiment submit configs/examples/multiply.json</code>).
          </p>
        </div>
      ) : null}
      {list.data && list.data.items.length > 0 ? (
        <ListTable
          label="shared embeddings"
          className="embeddings"
          columns={EMBEDDING_COLUMNS}
          rows={list.data.items}
          rowKey={(e) => e.id}
          rowAttrs={(e) => ({ 'data-embedding': e.ref })}
        />
      ) : null}
    </section>
  );
}

const SAMPLE_SET_COLUMNS: Column<SampleSet>[] = [
  {
    header: 'Name',
    className: 'nowrap',
    cell: (s) => (
      <Link to="/data/$id" params={{ id: s.id }}>
        {s.name}
      </Link>
    ),
  },
  {
    header: 'Label',
    cell: (s) => (
      <>
        <code>{s.labelColumn}</code> <span className="semantics">{s.labelSemantics}</span>
      </>
    ),
  },
  { header: 'Rows', cell: (s) => formatCount(s.rowCount), className: 'num' },
  { header: 'Event rate', cell: (s) => formatRate(s.labelStats), className: 'num' },
  { header: 'Time range', cell: (s) => formatTimeRange(s.timeColumn, s.timeMin, s.timeMax) },
  {
    header: 'Columns',
    className: 'wrap',
    cell: (s) => (
      <>
        {s.schema.length}: {summarizeKinds(s.schema)}
        <div className="muted small">{s.schema.map((c) => c.name).join(', ')}</div>
      </>
    ),
  },
  { header: 'Owner', cell: (s) => s.owner },
  { header: 'Data version', cell: (s) => <code className="small">{formatVersion(s.dataVersion)}</code> },
  { header: 'Sharing', cell: (s) => formatSharing(s.sharingPolicy.shareWith) },
];

function SampleSetTable({ items, line }: { items: SampleSet[]; line: string }) {
  return (
    <ListTable
      label={`sample sets of ${line}`}
      className="sample-sets"
      columns={SAMPLE_SET_COLUMNS}
      rows={items}
      rowKey={(s) => s.id}
      rowAttrs={(s) => ({ 'data-sample-set': s.name })}
    />
  );
}

function Filters({
  search,
  lineOptions,
  semanticsOptions,
}: {
  search: BankSearch;
  lineOptions: string[];
  semanticsOptions: string[];
}) {
  const navigate = useNavigate();
  const [line, setLine] = useState(search.line ?? '');
  const [semantics, setSemantics] = useState(search.semantics ?? '');
  const [columns, setColumns] = useState(search.columns ?? '');
  const [errors, setErrors] = useState<ReturnType<typeof validateBankFilters>>({});

  function apply(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const next = parseBankSearch({ line, semantics, columns: parseColumns(columns).join(',') });
    const found = validateBankFilters(next);
    setErrors(found);
    if (Object.keys(found).length) return;
    void navigate({ to: '/data', search: next });
  }

  return (
    <form className="filters" onSubmit={apply} aria-label="filter sample sets" noValidate>
      <div className="field">
        <label htmlFor="filter-line">Business line</label>
        <select id="filter-line" name="line" value={line} onChange={(e) => setLine(e.target.value)}>
          <option value="">any line</option>
          {lineOptions.map((l) => (
            <option key={l} value={l}>
              {l}
            </option>
          ))}
        </select>
        {errors.line ? <FieldError id="filter-line-error" text={errors.line} /> : null}
      </div>
      <div className="field">
        <label htmlFor="filter-semantics">Label semantics</label>
        <input
          id="filter-semantics"
          name="semantics"
          list="semantics-options"
          placeholder="any, e.g. exposure->click"
          value={semantics}
          onChange={(e) => setSemantics(e.target.value)}
          aria-invalid={errors.semantics ? true : undefined}
          aria-describedby={errors.semantics ? 'filter-semantics-error' : undefined}
          autoComplete="off"
        />
        <datalist id="semantics-options">
          {semanticsOptions.map((s) => (
            <option key={s} value={s} />
          ))}
        </datalist>
        {errors.semantics ? <FieldError id="filter-semantics-error" text={errors.semantics} /> : null}
      </div>
      <div className="field">
        <label htmlFor="filter-columns">Has columns</label>
        <input
          id="filter-columns"
          name="columns"
          placeholder="comma-separated, e.g. user_id,price"
          value={columns}
          onChange={(e) => setColumns(e.target.value)}
          aria-invalid={errors.columns ? true : undefined}
          aria-describedby={errors.columns ? 'filter-columns-error' : 'filter-columns-help'}
          autoComplete="off"
        />
        <span id="filter-columns-help" className="muted small">
          sets that contain all of them
        </span>
        {errors.columns ? <FieldError id="filter-columns-error" text={errors.columns} /> : null}
      </div>
      <div className="actions">
        <button type="submit">Apply filters</button>
        <Link to="/data" search={{}} className="button-link">
          Clear
        </Link>
      </div>
    </form>
  );
}

function FieldError({ id, text }: { id: string; text: string }) {
  return (
    <span id={id} className="field-error" role="alert">
      {text}
    </span>
  );
}
