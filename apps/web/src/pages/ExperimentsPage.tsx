import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type Experiment, type Page } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatDateTime } from '../lib/format';
import { EXPERIMENTS_PAGE_SIZE, experimentsQuery, type ExperimentsSearch } from '../lib/search';
import { ErrorNotice, Loading, Pager, Progress, StatusBadge, TableWrap } from '../components';

/** How often the list is polled: the progress of running experiments moves while the page is open. */
export const EXPERIMENTS_POLL_MS = 3000;

export function ExperimentsPage({ search }: { search: ExperimentsSearch }) {
  const key = useKey();
  const q = experimentsQuery(search);
  const list = useQuery({
    queryKey: ['experiments', key, q],
    queryFn: () => apiCall<Page<Experiment>>(key, `/experiments?${q}`),
    enabled: key !== '',
    refetchInterval: EXPERIMENTS_POLL_MS,
  });
  const page = search.page ?? 1;
  return (
    <>
      <h1>Experiments</h1>
      <p className="muted">
        Newest first; status and progress refresh every {EXPERIMENTS_POLL_MS / 1000} s. Submit one with{' '}
        <code>abacus experiment submit spec.json</code>.
      </p>
      {list.error ? <ErrorNotice title="Could not load experiments" error={list.error} /> : null}
      {list.isPending ? <Loading what="experiments" /> : null}
      {list.data && list.data.total === 0 ? (
        <div className="empty" role="status">
          <p>
            <strong>No experiments yet.</strong> Submit one with <code>abacus experiment submit configs/examples/score.json</code>
            .
          </p>
        </div>
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
          <Pager to="/experiments" page={page} pageSize={EXPERIMENTS_PAGE_SIZE} total={list.data.total} />
        </>
      ) : null}
    </>
  );
}
