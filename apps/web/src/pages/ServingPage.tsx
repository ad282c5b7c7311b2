import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type ServedModel } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatDateTime } from '../lib/format';
import { formatSignals } from '../lib/catalog';
import { ErrorNotice, Loading, TableWrap } from '../components';

/** How often the serving pages re-read the state (a switch can happen at any report). */
export const SERVING_POLL_MS = 5000;

/** Served models: the tier each runs on now, its tiers, pin and last load report. */
export function ServingPage() {
  const key = useKey();
  const list = useQuery({
    queryKey: ['serving', key],
    queryFn: () => apiCall<ServedModel[]>(key, '/serving'),
    enabled: key !== '',
    refetchInterval: SERVING_POLL_MS,
  });
  return (
    <>
      <h1>Serving</h1>
      <p className="muted">
        Models connected to serving systems through switch hooks: each steps down a tier (a cheaper <code>divide</code> tier) when
        its load signals pass the policy&apos;s thresholds and back up when they recover. Refreshed every {SERVING_POLL_MS / 1000}{' '}
        s.
      </p>
      {list.error ? <ErrorNotice title="Could not load served models" error={list.error} /> : null}
      {list.isPending ? <Loading what="served models" /> : null}
      {list.data && list.data.length === 0 ? (
        <div className="empty" role="status">
          <p>
            <strong>No served models yet</strong> — run a <code>divide</code> experiment to publish tiers, then register them with{' '}
            <code>POST /api/v1/serving</code> (see <code>examples/serving-client</code>).
          </p>
        </div>
      ) : null}
      {list.data && list.data.length > 0 ? (
        <TableWrap label="served models">
          <table className="list serving">
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Line</th>
                <th scope="col">Active tier</th>
                <th scope="col">Tiers</th>
                <th scope="col">Since</th>
                <th scope="col">Last signals</th>
                <th scope="col">Owner</th>
              </tr>
            </thead>
            <tbody>
              {list.data.map((s) => (
                <tr key={s.id} data-serving={s.modelName}>
                  <td className="nowrap">
                    <Link to="/serving/$id" params={{ id: s.id }}>
                      {s.modelName}
                    </Link>
                  </td>
                  <td>{s.businessLine}</td>
                  <td className="nowrap" data-active-tier={s.activeTier}>
                    tier-{s.activeTier}
                    {s.pinnedTier !== null ? <span className="muted"> (pinned)</span> : null}
                  </td>
                  <td>{s.tiers.map((t) => `tier-${t}`).join(', ')}</td>
                  <td className="nowrap">{formatDateTime(s.tierSince)}</td>
                  <td className="wrap">
                    {formatSignals(s.lastSignals)}
                    {s.lastSignalAt ? <div className="muted small">{formatDateTime(s.lastSignalAt)}</div> : null}
                  </td>
                  <td>{s.owner}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
    </>
  );
}
