import { Link, useNavigate } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type BusinessLine, type Experiment, type Page } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatDateTime, isTerminal } from '../lib/format';
import {
  EXPERIMENT_KIND_VALUES,
  EXPERIMENT_STATUS_VALUES,
  EXPERIMENTS_PAGE_SIZE,
  experimentsQuery,
  hasExperimentFilters,
  parseExperimentsSearch,
  type ExperimentsSearch,
} from '../lib/search';
import { ErrorNotice, Loading, Pager, Progress, StatusBadge } from '../components';
import { lineChoices, ListCount, ListFilters, ListTable, type Column } from '../list';

/** How often the list is polled while a row on it has not ended (its status and progress move). */
export const EXPERIMENTS_POLL_MS = 3000;

export function ExperimentsPage({ search }: { search: ExperimentsSearch }) {
  const key = useKey();
  const q = experimentsQuery(search);
  const list = useQuery({
    queryKey: ['experiments', key, q],
    queryFn: () => apiCall<Page<Experiment>>(key, `/experiments?${q}`),
    enabled: key !== '',
    placeholderData: (prev) => prev,
    // poll only while something on this page can still change
    refetchInterval: (query) =>
      query.state.data && query.state.data.items.every((e) => isTerminal(e.status)) ? false : EXPERIMENTS_POLL_MS,
  });
  const lines = useQuery({
    queryKey: ['business-lines', key],
    queryFn: () => apiCall<BusinessLine[]>(key, '/business-lines'),
    enabled: key !== '',
    staleTime: 60_000,
  });
  const live = list.data?.items.some((e) => !isTerminal(e.status));
  return (
    <>
      <div className="page-head">
        <h1>Experiments</h1>
        <Link to="/experiments/new" search={search.line ? { line: search.line } : {}} className="button-link primary">
          New experiment
        </Link>
      </div>
      <p className="muted">
        Newest first{live ? `; status and progress refresh every ${EXPERIMENTS_POLL_MS / 1000} s while one runs` : ''}. From the
        command line: <code>abacus experiment submit spec.json</code>.
      </p>
      <ExperimentFilters key={JSON.stringify(search)} search={search} lineOptions={(lines.data ?? []).map((l) => l.name)} />
      {list.error ? <ErrorNotice title="Could not load experiments" error={list.error} /> : null}
      {list.isPending ? <Loading what="experiments" /> : null}
      {list.data ? (
        <ListCount
          total={list.data.total}
          noun={['experiment', 'experiments']}
          filtered={hasExperimentFilters(search)}
          clear={
            <Link to="/experiments" search={{}}>
              Clear the filters
            </Link>
          }
          empty={
            <>
              <p>
                <strong>No experiments yet</strong> — <Link to="/experiments/new">launch one</Link> (subtract finds the features
                you can delete; score ranks them by information value), or run the demo: <code>bash scripts/quickstart.sh</code>{' '}
                then <code>npx abacus experiment submit configs/examples/score.json --wait</code>.
              </p>
              <p className="muted">
                An experiment needs a sample set: see <Link to="/data">Data</Link>, or import one with{' '}
                <code>abacus samples import data.csv --name my-set --domain feed --label click</code>.
              </p>
            </>
          }
        />
      ) : null}
      {list.data && list.data.items.length > 0 ? (
        <>
          <ListTable
            label="experiments"
            columns={EXPERIMENT_COLUMNS}
            rows={list.data.items}
            rowKey={(e) => e.id}
            rowAttrs={(e) => ({ 'data-experiment-id': e.id })}
          />
          {/* the page of the rows shown: while the next page loads, the previous one stays up */}
          <Pager to="/experiments" page={list.data.page} pageSize={EXPERIMENTS_PAGE_SIZE} total={list.data.total} />
        </>
      ) : null}
    </>
  );
}

const EXPERIMENT_COLUMNS: Column<Experiment>[] = [
  { header: 'Kind', cell: (e) => e.kind },
  { header: 'Line', cell: (e) => e.businessLine },
  {
    header: 'Name',
    cell: (e) => (
      <Link to="/experiments/$id" params={{ id: e.id }}>
        {e.name || '(no name)'}
      </Link>
    ),
  },
  { header: 'Status', cell: (e) => <StatusBadge status={e.status} /> },
  {
    header: 'Progress',
    cell: (e) => <Progress value={e.progress} message={e.status === 'running' ? e.progressMessage : undefined} />,
  },
  { header: 'Owner', cell: (e) => e.owner },
  { header: 'Created', cell: (e) => formatDateTime(e.createdAt), className: 'nowrap' },
  {
    header: 'Link',
    cell: (e) => (
      <Link to="/experiments/$id" params={{ id: e.id }} aria-label={`${e.id.slice(0, 8)}: open experiment ${e.name || e.id}`}>
        {e.id.slice(0, 8)}
      </Link>
    ),
  },
];

/** Kind, status, line and owner, kept in the URL (a filtered list is a link). */
function ExperimentFilters({ search, lineOptions }: { search: ExperimentsSearch; lineOptions: string[] }) {
  const navigate = useNavigate();
  return (
    <ListFilters
      label="filter experiments"
      initial={search}
      onApply={(v) => void navigate({ to: '/experiments', search: parseExperimentsSearch(v) })}
      clear={
        <Link to="/experiments" search={{}} className="button-link">
          Clear
        </Link>
      }
      fields={[
        { kind: 'select', name: 'kind', id: 'filter-kind', label: 'Kind', any: 'any kind', options: [...EXPERIMENT_KIND_VALUES] },
        {
          kind: 'select',
          name: 'status',
          id: 'filter-status',
          label: 'Status',
          any: 'any status',
          options: [...EXPERIMENT_STATUS_VALUES],
        },
        {
          kind: 'select',
          name: 'line',
          id: 'filter-line',
          label: 'Business line',
          any: 'any line',
          options: lineChoices(lineOptions, search.line),
        },
        { kind: 'text', name: 'owner', id: 'filter-owner', label: 'Owner', placeholder: "any, e.g. the key's name" },
      ]}
    />
  );
}
