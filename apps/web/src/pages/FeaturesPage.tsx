import { Link, useNavigate } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type BusinessLine, type Feature, type Page } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatDateTime } from '../lib/format';
import {
  FEATURE_KINDS,
  FEATURE_ROLES,
  FEATURES_PAGE_SIZE,
  featuresQuery,
  hasFeatureFilters,
  parseFeaturesSearch,
  type FeaturesSearch,
} from '../lib/catalog';
import { ErrorNotice, Loading } from '../components';
import { lineChoices, ListCount, ListFilters, ListTable, type Column } from '../list';
import { FeaturesPager } from '../catalog-components';
import { RegisterFeature } from './RegisterFeature';

/** Where a feature's values come from: "users.age (key user_id)", or a sample-set column. */
export function featureSource(f: Pick<Feature, 'sourceTable' | 'sourceColumn' | 'entityKey' | 'name' | 'expression'>): string {
  if (f.expression) return `expression over ${f.expression.sampleSet}: ${f.expression.text}`;
  if (f.sourceTable) return `${f.sourceTable}.${f.sourceColumn ?? f.name}${f.entityKey ? ` (key ${f.entityKey})` : ''}`;
  return `sample-set column ${f.sourceColumn ?? f.name}`;
}

/** The feature registry: search, filters kept in the URL, pages; and the form that registers a candidate. */
export function FeaturesPage({ search }: { search: FeaturesSearch }) {
  const key = useKey();
  const q = featuresQuery(search);
  const list = useQuery({
    queryKey: ['features', key, q],
    queryFn: () => apiCall<Page<Feature>>(key, `/features?${q}`),
    enabled: key !== '',
    placeholderData: (prev) => prev,
  });
  const lines = useQuery({
    queryKey: ['business-lines', key],
    queryFn: () => apiCall<BusinessLine[]>(key, '/business-lines'),
    enabled: key !== '',
    staleTime: 60_000,
  });
  const lineNames = (lines.data ?? []).map((l) => l.name);
  return (
    <>
      <div className="page-head">
        <h1>Features</h1>
        <a href="#register" className="button-link primary">
          Register a candidate
        </a>
      </div>
      <p className="muted">
        The registry: every feature of your business lines, where its values come from, and (on its page) its costs and the
        experiments that measured it. From the command line: <code>abacus features list</code>.
      </p>
      <FeatureFilters key={JSON.stringify(search)} search={search} lineOptions={lineNames} />
      {list.error ? <ErrorNotice title="Could not load features" error={list.error} /> : null}
      {list.isPending ? <Loading what="features" /> : null}
      {list.data ? (
        <ListCount
          total={list.data.total}
          noun={['feature', 'features']}
          filtered={hasFeatureFilters(search)}
          clear={
            <Link to="/features" search={{}}>
              Clear the filters
            </Link>
          }
          empty={
            <p>
              <strong>No features registered yet</strong> — upload a feature table or register a column with the form below, or
              run the demo (<code>bash scripts/quickstart.sh</code>), which registers the simulated world&apos;s features.
            </p>
          }
        />
      ) : null}
      {list.data && list.data.items.length > 0 ? (
        <>
          <ListTable
            label="features"
            className="features"
            columns={FEATURE_COLUMNS}
            rows={list.data.items}
            rowKey={(f) => f.id}
            rowAttrs={(f) => ({ 'data-feature': f.name })}
          />
          <FeaturesPager page={search.page ?? 1} pageSize={FEATURES_PAGE_SIZE} total={list.data.total} />
        </>
      ) : null}
      <RegisterFeature lineOptions={lineNames} />
    </>
  );
}

const FEATURE_COLUMNS: Column<Feature>[] = [
  {
    header: 'Name',
    className: 'nowrap',
    cell: (f) => (
      <Link to="/features/$id" params={{ id: f.id }}>
        {f.name}
      </Link>
    ),
  },
  { header: 'Line', cell: (f) => f.businessLine },
  { header: 'Kind', cell: (f) => f.kind },
  { header: 'Source', cell: (f) => featureSource(f), className: 'wrap' },
  { header: 'Transform', cell: (f) => f.transform.type },
  { header: 'Owner', cell: (f) => f.owner },
  { header: 'Registered', cell: (f) => formatDateTime(f.createdAt), className: 'nowrap' },
];

function FeatureFilters({ search, lineOptions }: { search: FeaturesSearch; lineOptions: string[] }) {
  const navigate = useNavigate();
  return (
    <ListFilters
      label="filter features"
      search
      initial={search}
      onApply={(v) => void navigate({ to: '/features', search: parseFeaturesSearch(v) })}
      clear={
        <Link to="/features" search={{}} className="button-link">
          Clear
        </Link>
      }
      fields={[
        { kind: 'search', name: 'q', id: 'feature-q', label: 'Name contains' },
        {
          kind: 'select',
          name: 'line',
          id: 'feature-line',
          label: 'Business line',
          any: 'any line',
          options: lineChoices(lineOptions, search.line),
        },
        { kind: 'select', name: 'kind', id: 'feature-kind', label: 'Kind', any: 'any kind', options: [...FEATURE_KINDS] },
        { kind: 'text', name: 'owner', id: 'feature-owner', label: 'Owner' },
        {
          kind: 'select',
          name: 'role',
          id: 'feature-role',
          label: 'Role',
          any: 'any role',
          options: FEATURE_ROLES.map((r) => ({
            value: r,
            label: r === 'candidate' ? 'candidate (in no model)' : 'in a registered model',
          })),
          help: 'by the registered models of its line',
        },
      ]}
    />
  );
}
