import { Link } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { apiCall, type ExperimentDetail } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatDateTime, formatProgress, isTerminal } from '../lib/format';
import { ResultCharts } from '../charts';
import { ScoreBins } from '../ScoreBins';
import { ErrorNotice, KeyValueTable, Loading, Progress, StatusBadge, TableWrap } from '../components';

export const EXPERIMENT_POLL_MS = 2000;

/** One experiment: status, progress, error, spec, result, trials; cancel while it has not ended. */
export function ExperimentPage({ id }: { id: string }) {
  const key = useKey();
  const queryClient = useQueryClient();
  const detail = useQuery({
    queryKey: ['experiment', key, id],
    queryFn: () => apiCall<ExperimentDetail>(key, `/experiments/${encodeURIComponent(id)}`),
    enabled: key !== '',
    refetchInterval: (q) => (q.state.data && isTerminal(q.state.data.status) ? false : EXPERIMENT_POLL_MS),
  });
  const cancel = useMutation({
    mutationFn: () => apiCall<ExperimentDetail>(key, `/experiments/${encodeURIComponent(id)}/cancel`, { method: 'POST' }),
    onSuccess: (e) => {
      queryClient.setQueryData(['experiment', key, id], e);
      void queryClient.invalidateQueries({ queryKey: ['experiments'] });
    },
  });

  const e = detail.data;
  return (
    <>
      <p>
        <Link to="/experiments">← All experiments</Link>
      </p>
      {detail.error ? <ErrorNotice title="Could not load the experiment" error={detail.error} /> : null}
      {detail.isPending ? <Loading what="the experiment" /> : null}
      {e ? (
        <>
          <h1>
            {e.name || '(no name)'} <span className="muted h-sub">{e.kind}</span>
          </h1>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={e.status} />
            </dd>
            <dt>Progress</dt>
            <dd>
              <Progress value={e.progress} message={e.progressMessage} />
            </dd>
            <dt>Business line</dt>
            <dd>{e.businessLine}</dd>
            <dt>Owner</dt>
            <dd>{e.owner}</dd>
            <dt>Created</dt>
            <dd>{formatDateTime(e.createdAt)}</dd>
            <dt>Started</dt>
            <dd>{formatDateTime(e.startedAt)}</dd>
            <dt>Finished</dt>
            <dd>{formatDateTime(e.finishedAt)}</dd>
            <dt>Id</dt>
            <dd>
              <code>{e.id}</code>
            </dd>
          </dl>
          {e.error ? (
            <div className="notice notice-error" role="alert">
              <strong>{e.status === 'failed' ? 'Failed' : 'Error'}:</strong> {e.error}
            </div>
          ) : null}
          {!isTerminal(e.status) ? (
            <p>
              <button type="button" className="danger" disabled={cancel.isPending} onClick={() => cancel.mutate()}>
                {cancel.isPending ? 'Cancelling…' : 'Cancel experiment'}
              </button>
            </p>
          ) : null}
          {cancel.error ? <ErrorNotice title="Could not cancel" error={cancel.error} /> : null}

          <h2>Spec</h2>
          <KeyValueTable value={e.spec} label="spec" />
          <h2>Result</h2>
          {e.result ? (
            <>
              <ResultCharts kind={e.kind} result={e.result} />
              {e.kind === 'score' && e.status === 'succeeded' ? <ScoreBins experimentId={e.id} /> : null}
              <KeyValueTable value={e.result} label="result" />
            </>
          ) : (
            <p className="muted">{isTerminal(e.status) ? 'no result' : 'not finished yet'}</p>
          )}
          <h2>Trials ({e.trials.length})</h2>
          {e.trials.length ? (
            <TableWrap label="trials">
              <table className="list">
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Status</th>
                    <th scope="col">Progress</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Backend</th>
                    <th scope="col">Error</th>
                  </tr>
                </thead>
                <tbody>
                  {e.trials.map((t) => (
                    <tr key={t.id}>
                      <td>{t.seq}</td>
                      <td>{t.kind}</td>
                      <td>
                        <StatusBadge status={t.status} />
                      </td>
                      <td>{formatProgress(t.progress)}</td>
                      <td>{t.attempts}</td>
                      <td>{t.backend ?? '—'}</td>
                      <td className="wrap">{t.error ?? ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          ) : (
            <p className="muted">no trials</p>
          )}
        </>
      ) : null}
    </>
  );
}
