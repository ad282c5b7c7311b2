import { useEffect, useState } from 'react';
import { Link } from '@tanstack/react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { apiCall, type ExperimentDetail } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatDateTime, isTerminal } from '../lib/format';
import { verdictOf } from '../lib/verdict';
import { ResultCharts } from '../charts';
import { ScoreBins } from '../ScoreBins';
import { DiscoverResult } from '../DiscoverResult';
import { TrialTable, TrialTimeline } from '../timeline';
import { ErrorNotice, KeyValueTable, Loading, Progress, RawJson, StatusBadge } from '../components';

export const EXPERIMENT_POLL_MS = 2000;

/**
 * One experiment: status, progress, error, verdict, charts, trials, the raw result (collapsed JSON with
 * copy and download) and the spec; cancel while it has not ended.
 */
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
  const running = e ? !isTerminal(e.status) : false;
  // the clock the open spans of the timeline run to: ticks each second while the experiment runs
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!running) return;
    const t = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(t);
  }, [running]);
  const verdict = e?.result ? verdictOf(e.kind, e.result) : null;
  const failedTrials = e ? e.trials.filter((t) => t.status === 'failed' && t.error) : [];
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
            <dd aria-live="polite">
              <Progress value={e.progress} message={e.progressMessage} />
              {running ? <span className="muted small"> (refreshes every {EXPERIMENT_POLL_MS / 1000} s)</span> : null}
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
              {failedTrials.length ? (
                <ul className="trial-errors">
                  {failedTrials.map((t) => (
                    <li key={t.id}>
                      trial {t.seq} ({t.kind}, {t.attempts} attempt{t.attempts === 1 ? '' : 's'}): {t.error}
                    </li>
                  ))}
                </ul>
              ) : null}
            </div>
          ) : null}
          {verdict ? (
            <section className={`verdict verdict-${verdict.tone}`} aria-labelledby="verdict-title">
              <h2 id="verdict-title">Verdict</h2>
              <p className="verdict-headline">{verdict.headline}</p>
              {verdict.detail ? <p className="verdict-detail">{verdict.detail}</p> : null}
            </section>
          ) : null}
          {!isTerminal(e.status) ? (
            <p>
              <button type="button" className="danger" disabled={cancel.isPending} onClick={() => cancel.mutate()}>
                {cancel.isPending ? 'Cancelling…' : 'Cancel experiment'}
              </button>
            </p>
          ) : null}
          {cancel.error ? <ErrorNotice title="Could not cancel" error={cancel.error} /> : null}

          {e.result ? <ResultCharts kind={e.kind} result={e.result} /> : null}
          {e.kind === 'score' && e.status === 'succeeded' ? <ScoreBins experimentId={e.id} /> : null}
          {e.kind === 'discover' && e.result ? <DiscoverResult result={e.result} /> : null}
          <h2>Trials ({e.trials.length})</h2>
          {e.trials.length ? (
            <>
              <TrialTimeline trials={e.trials} now={now} experimentName={e.name || e.id} />
              <TrialTable trials={e.trials} now={now} />
            </>
          ) : (
            <p className="muted">no trials</p>
          )}
          <h2>Result</h2>
          {e.result ? (
            <RawJson value={e.result} label="result" fileName={`experiment-${e.id}-result.json`} />
          ) : (
            <p className="muted">{isTerminal(e.status) ? 'no result' : 'not finished yet'}</p>
          )}
          <h2>Spec</h2>
          <KeyValueTable value={e.spec} label="spec" />
        </>
      ) : null}
    </>
  );
}
