import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type SampleSet } from '../lib/api';
import { useKey } from '../lib/auth';
import {
  formatCount,
  formatDateTime,
  formatRate,
  formatSharing,
  formatTimeValue,
  formatVersion,
  summarizeKinds,
} from '../lib/format';
import { ErrorNotice, Loading, TableWrap } from '../components';

/** One sample set of the DataBank: what `abacus bank show` prints. */
export function SampleSetPage({ id }: { id: string }) {
  const key = useKey();
  const set = useQuery({
    queryKey: ['sample-set', key, id],
    queryFn: () => apiCall<SampleSet>(key, `/sample-sets/${encodeURIComponent(id)}`),
    enabled: key !== '',
  });
  const s = set.data;
  return (
    <>
      <p>
        <Link to="/data">← All sample sets</Link>
      </p>
      {set.error ? <ErrorNotice title="Could not load the sample set" error={set.error} /> : null}
      {set.isPending ? <Loading what="the sample set" /> : null}
      {s ? (
        <>
          <h1>
            {s.name} <span className="muted h-sub">{s.businessLine}</span>
          </h1>
          <div className="columns-2">
            <section aria-labelledby="about">
              <h2 id="about">About</h2>
              <dl className="facts">
                <dt>Business line</dt>
                <dd>{s.businessLine}</dd>
                <dt>Owner</dt>
                <dd>{s.owner}</dd>
                <dt>Rows</dt>
                <dd>{formatCount(s.rowCount)}</dd>
                <dt>Time column</dt>
                <dd>{s.timeColumn ? <code>{s.timeColumn}</code> : 'none'}</dd>
                <dt>Time range</dt>
                <dd>{s.timeColumn ? `${formatTimeValue(s.timeMin)} → ${formatTimeValue(s.timeMax)}` : '—'}</dd>
                <dt>Key columns</dt>
                <dd>{s.keyColumns.length ? s.keyColumns.join(', ') : 'none'}</dd>
                <dt>Created</dt>
                <dd>{formatDateTime(s.createdAt)}</dd>
                <dt>Id</dt>
                <dd>
                  <code>{s.id}</code>
                </dd>
                <dt>Stored</dt>
                <dd>
                  {s.location ? (
                    <>
                      by reference, not copied: <code>{s.location}</code> ({formatCount(s.objects?.length ?? 0)} Parquet
                      object(s))
                    </>
                  ) : (
                    'uploaded into the data directory'
                  )}
                </dd>
              </dl>
            </section>
            <section aria-labelledby="label">
              <h2 id="label">Label</h2>
              <dl className="facts">
                <dt>Label column</dt>
                <dd>
                  <code>{s.labelColumn}</code>
                </dd>
                <dt>Label semantics</dt>
                <dd>{s.labelSemantics}</dd>
                <dt>Positive value</dt>
                <dd>{s.labelStats ? <code>{s.labelStats.positive}</code> : '—'}</dd>
                <dt>Events</dt>
                <dd>{formatCount(s.labelStats?.events)}</dd>
                <dt>Non-events</dt>
                <dd>{formatCount(s.labelStats?.nonEvents)}</dd>
                <dt>Event rate</dt>
                <dd>{formatRate(s.labelStats)}</dd>
              </dl>
              <h2 id="sharing">Sharing and version</h2>
              <dl className="facts">
                <dt>Sharing policy</dt>
                <dd>{formatSharing(s.sharingPolicy.shareWith)}</dd>
                <dt>Data version</dt>
                <dd>
                  <code>{formatVersion(s.dataVersion)}</code>
                </dd>
              </dl>
            </section>
          </div>
          <h2 id="schema">
            Schema <span className="muted h-sub">{`${s.schema.length} columns: ${summarizeKinds(s.schema)}`}</span>
          </h2>
          <TableWrap label="schema">
            <table className="list schema">
              <thead>
                <tr>
                  <th scope="col">Column</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Source type</th>
                  <th scope="col">Role</th>
                </tr>
              </thead>
              <tbody>
                {s.schema.map((c) => (
                  <tr key={c.name}>
                    <td>
                      <code>{c.name}</code>
                    </td>
                    <td>{c.kind}</td>
                    <td>{c.sourceType}</td>
                    <td>
                      {c.name === s.labelColumn
                        ? 'label'
                        : c.name === s.timeColumn
                          ? 'time'
                          : s.keyColumns.includes(c.name)
                            ? 'key'
                            : 'feature'}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <p className="muted">
            In the CLI: <code>abacus bank show {s.id}</code>
          </p>
        </>
      ) : null}
    </>
  );
}
