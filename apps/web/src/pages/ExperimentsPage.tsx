import { useState, type FormEvent } from 'react';
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
import { ErrorNotice, Loading, Pager, Progress, StatusBadge, TableWrap } from '../components';

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
      {list.data && list.data.total === 0 ? (
        hasExperimentFilters(search) ? (
          <div className="empty" role="status">
            <p>
              <strong>No experiments match these filters.</strong>{' '}
              <Link to="/experiments" search={{}}>
                Clear the filters
              </Link>
            </p>
          </div>
        ) : (
          <div className="empty" role="status">
            <p>
              <strong>No experiments yet</strong> — <Link to="/experiments/new">launch one</Link> (subtract finds the features you
              can delete; score ranks them by information value), or run the demo: <code>bash scripts/quickstart.sh</code> then{' '}
              <code>npx abacus experiment submit configs/examples/score.json --wait</code>.
            </p>
            <p className="muted">
              An experiment needs a sample set: see <Link to="/data">Data</Link>, or import one with{' '}
              <code>abacus samples import data.csv --name my-set --domain feed --label click</code>.
            </p>
          </div>
        )
      ) : null}
      {list.data && list.data.total > 0 ? (
        <p role="status" className="result-count">
          {list.data.total.toLocaleString('en-US')} experiment{list.data.total === 1 ? '' : 's'}
          {hasExperimentFilters(search) ? ' match' : ''}
        </p>
      ) : null}
      {list.data && list.data.items.length > 0 ? (
        <>
          <TableWrap label="experiments">
            <table className="list">
              <thead>
                <tr>
                  <th scope="col">Kind</th>
                  <th scope="col">Line</th>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Progress</th>
                  <th scope="col">Owner</th>
                  <th scope="col">Created</th>
                  <th scope="col">Link</th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((e) => (
                  <tr key={e.id} data-experiment-id={e.id}>
                    <td>{e.kind}</td>
                    <td>{e.businessLine}</td>
                    <td>
                      <Link to="/experiments/$id" params={{ id: e.id }}>
                        {e.name || '(no name)'}
                      </Link>
                    </td>
                    <td>
                      <StatusBadge status={e.status} />
                    </td>
                    <td>
                      <Progress value={e.progress} message={e.status === 'running' ? e.progressMessage : undefined} />
                    </td>
                    <td>{e.owner}</td>
                    <td className="nowrap">{formatDateTime(e.createdAt)}</td>
                    <td>
                      <Link
                        to="/experiments/$id"
                        params={{ id: e.id }}
                        aria-label={`${e.id.slice(0, 8)}: open experiment ${e.name || e.id}`}
                      >
                        {e.id.slice(0, 8)}
                      </Link>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          {/* the page of the rows shown: while the next page loads, the previous one stays up */}
          <Pager to="/experiments" page={list.data.page} pageSize={EXPERIMENTS_PAGE_SIZE} total={list.data.total} />
        </>
      ) : null}
    </>
  );
}

/** Kind, status, line and owner, kept in the URL (a filtered list is a link). */
function ExperimentFilters({ search, lineOptions }: { search: ExperimentsSearch; lineOptions: string[] }) {
  const navigate = useNavigate();
  const [kind, setKind] = useState<string>(search.kind ?? '');
  const [status, setStatus] = useState<string>(search.status ?? '');
  const [line, setLine] = useState(search.line ?? '');
  const [owner, setOwner] = useState(search.owner ?? '');
  const lines = [...new Set([...lineOptions, ...(search.line ? [search.line] : [])])].sort();

  function apply(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    void navigate({ to: '/experiments', search: parseExperimentsSearch({ kind, status, line, owner }) });
  }

  return (
    <form className="filters filters-4" onSubmit={apply} aria-label="filter experiments" noValidate>
      <div className="field">
        <label htmlFor="filter-kind">Kind</label>
        <select id="filter-kind" name="kind" value={kind} onChange={(e) => setKind(e.target.value)}>
          <option value="">any kind</option>
          {EXPERIMENT_KIND_VALUES.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor="filter-status">Status</label>
        <select id="filter-status" name="status" value={status} onChange={(e) => setStatus(e.target.value)}>
          <option value="">any status</option>
          {EXPERIMENT_STATUS_VALUES.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor="filter-line">Business line</label>
        <select id="filter-line" name="line" value={line} onChange={(e) => setLine(e.target.value)}>
          <option value="">any line</option>
          {lines.map((l) => (
            <option key={l} value={l}>
              {l}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor="filter-owner">Owner</label>
        <input
          id="filter-owner"
          name="owner"
          placeholder="any, e.g. the key's name"
          value={owner}
          onChange={(e) => setOwner(e.target.value)}
          autoComplete="off"
        />
      </div>
      <div className="actions">
        <button type="submit">Apply filters</button>
        <Link to="/experiments" search={{}} className="button-link">
          Clear
        </Link>
      </div>
    </form>
  );
}
