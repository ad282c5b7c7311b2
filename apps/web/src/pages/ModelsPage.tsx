import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type ModelVersion, type Page, type SampleSet } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatDateTime } from '../lib/format';
import { formatFractions, formatMetric, groupModels, versionLabel, type ModelsSearch } from '../lib/catalog';
import { ErrorNotice, Loading } from '../components';
import { ListTable, type Column } from '../list';

/** "mlp 64-32, dim 8, mean, wide" — a model's architecture in one line. */
export function architectureSummary(a: Record<string, unknown>): string {
  const parts: string[] = [];
  if (Array.isArray(a.hidden)) parts.push(`mlp ${a.hidden.join('-')}`);
  if (typeof a.embeddingDim === 'number') parts.push(`dim ${a.embeddingDim}`);
  if (typeof a.pooling === 'string') parts.push(a.pooling);
  if (a.wide === true) parts.push('wide');
  return parts.length ? parts.join(', ') : 'defaults';
}

/** Registered models grouped by name: versions (vN) and divide tiers (tier-N) with their features, set, AUC and costs. */
export function ModelsPage({ search }: { search: ModelsSearch }) {
  const key = useKey();
  const q = new URLSearchParams({ pageSize: '500', ...(search.line ? { businessLine: search.line } : {}) }).toString();
  const list = useQuery({
    queryKey: ['models', key, q],
    queryFn: () => apiCall<Page<ModelVersion>>(key, `/models?${q}`),
    enabled: key !== '',
  });
  // the sets' names for the links (a set the key may not read keeps its id)
  const sets = useQuery({
    queryKey: ['sample-sets', key, 'pageSize=500'],
    queryFn: () => apiCall<Page<SampleSet>>(key, '/sample-sets?pageSize=500'),
    enabled: key !== '',
    staleTime: 60_000,
  });
  const setName = new Map((sets.data?.items ?? []).map((x) => [x.id, `${x.businessLine}/${x.name}`]));
  const groups = groupModels(list.data?.items ?? []);
  const columns: Column<ModelVersion>[] = [
    {
      header: 'Version',
      className: 'nowrap',
      cell: (m) => (
        <Link to="/models/$id" params={{ id: m.id }}>
          {versionLabel(m)}
        </Link>
      ),
    },
    {
      header: 'Features',
      className: 'wrap',
      cell: (m) => (
        <>
          {m.features.length}
          <div className="muted small">{m.features.join(', ')}</div>
        </>
      ),
    },
    {
      header: 'Sample set',
      cell: (m) => (
        <Link to="/data/$id" params={{ id: m.sampleSetId }}>
          {setName.get(m.sampleSetId) ?? `set ${m.sampleSetId.slice(0, 8)}`}
        </Link>
      ),
    },
    { header: 'Architecture', cell: (m) => architectureSummary(m.architecture) },
    { header: 'AUC', cell: (m) => formatMetric(m.metrics?.auc), className: 'num' },
    { header: 'Cost of full model', cell: (m) => formatFractions(m.costs?.fractions) },
    { header: 'Registered', cell: (m) => formatDateTime(m.createdAt), className: 'nowrap' },
  ];
  return (
    <>
      <h1>Models</h1>
      <p className="muted">
        Registered models of your business lines, by name; each version with its features, sample set and architecture. A{' '}
        <code>divide</code> experiment publishes its budget tiers as versions (<code>tier-N</code>). Model specs name a version as{' '}
        <code>name@v3</code> or <code>name@tier-2</code>.
        {search.line ? (
          <>
            {' '}
            Showing {search.line} only: <Link to="/models">all lines</Link>.
          </>
        ) : null}
      </p>
      {list.error ? <ErrorNotice title="Could not load models" error={list.error} /> : null}
      {list.isPending ? <Loading what="models" /> : null}
      {list.data && list.data.total === 0 ? (
        <div className="empty" role="status">
          <p>
            <strong>No models registered yet</strong> — register one with <code>POST /api/v1/models</code> (a name, a sample set
            and its features), or run a <code>divide</code> experiment, which publishes its tiers as models.
          </p>
        </div>
      ) : null}
      {list.data && list.data.total > list.data.items.length ? (
        <p className="muted">
          The {list.data.items.length} newest of {list.data.total} versions are shown; filter by line for the rest.
        </p>
      ) : null}
      {groups.map((g) => (
        <section key={g.key} aria-labelledby={`model-${g.key}`} data-model-name={g.name}>
          <h2 id={`model-${g.key}`}>
            {g.name}{' '}
            <span className="muted h-sub">
              {g.businessLine} · {g.versions.length} version{g.versions.length === 1 ? '' : 's'}
            </span>
          </h2>
          <ListTable
            label={`versions of ${g.name}`}
            className="models"
            columns={columns}
            rows={g.versions}
            rowKey={(m) => m.id}
            rowAttrs={(m) => ({ 'data-version': String(m.version), 'data-tier': String(m.tier ?? '') })}
          />
        </section>
      ))}
    </>
  );
}
