import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type Page, type Report, type ReportSchedule } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatDateTime } from '../lib/format';
import { changesText } from '../lib/reports';
import { ErrorNotice, Loading, StatusBadge, TableWrap } from '../components';

export const REPORTS_POLL_MS = 5000;

/** The schedules of the models the key may read. */
export function SchedulesTable({ schedules }: { schedules: ReportSchedule[] }) {
  return (
    <TableWrap label="report schedules">
      <table className="list">
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Cron</th>
            <th scope="col">Time zone</th>
            <th scope="col">Next run</th>
            <th scope="col">E-mail</th>
            <th scope="col">Owner</th>
          </tr>
        </thead>
        <tbody>
          {schedules.map((s) => (
            <tr key={s.id} data-schedule-id={s.id}>
              <td>
                {s.businessLine}/{s.modelName}
              </td>
              <td>
                <code>{s.cron}</code>
              </td>
              <td>{s.timezone}</td>
              <td className="nowrap">{s.nextRunAt ? formatDateTime(s.nextRunAt) : '—'}</td>
              <td>{s.emails.join(', ') || '—'}</td>
              <td>{s.owner}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

export function ReportsPage() {
  const key = useKey();
  const list = useQuery({
    queryKey: ['reports', key],
    queryFn: () => apiCall<Page<Report>>(key, '/reports?pageSize=100'),
    enabled: key !== '',
    refetchInterval: REPORTS_POLL_MS,
  });
  const schedules = useQuery({
    queryKey: ['report-schedules', key],
    queryFn: () => apiCall<ReportSchedule[]>(key, '/report-schedules'),
    enabled: key !== '',
  });
  return (
    <>
      <h1>Reports</h1>
      <p className="muted">
        Auto-pruning reports, newest first: which features each model can drop, and what changed since its previous report.
        Schedule one with <code>abacus report schedule set --model M --line L</code>; run one now with{' '}
        <code>abacus report run</code>.
      </p>
      {list.error ? <ErrorNotice title="Could not load reports" error={list.error} /> : null}
      {list.isPending ? <Loading what="reports" /> : null}
      {list.data && list.data.total === 0 ? (
        <div className="empty" role="status">
          <p>
            <strong>No reports yet.</strong> A model&apos;s schedule makes one every week.
          </p>
        </div>
      ) : null}
      {list.data && list.data.items.length > 0 ? (
        <TableWrap label="reports">
          <table className="list">
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Date</th>
                <th scope="col">Status</th>
                <th scope="col">Removable</th>
                <th scope="col">Changes</th>
                <th scope="col">Trigger</th>
              </tr>
            </thead>
            <tbody>
              {list.data.items.map((r) => (
                <tr key={r.id} data-report-id={r.id}>
                  <td>
                    <Link to="/reports/$id" params={{ id: r.id }}>
                      {r.businessLine}/{r.modelName}
                    </Link>
                  </td>
                  <td className="nowrap">{formatDateTime(r.fireAt)}</td>
                  <td>
                    <StatusBadge status={r.status} />
                  </td>
                  <td>{r.summary ? `${r.summary.removable} of ${r.summary.features}` : '—'}</td>
                  <td>{changesText(r.summary, r.previousReportId !== null)}</td>
                  <td>{r.trigger}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      <h2>Schedules</h2>
      {schedules.error ? <ErrorNotice title="Could not load schedules" error={schedules.error} /> : null}
      {schedules.data && schedules.data.length === 0 ? <p className="muted">No model has a report schedule.</p> : null}
      {schedules.data && schedules.data.length > 0 ? <SchedulesTable schedules={schedules.data} /> : null}
    </>
  );
}
