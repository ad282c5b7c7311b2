import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { ChartView } from '../charts';
import { apiCall, type Report, type ReportContent, type ReportSchedule } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatDateTime } from '../lib/format';
import { fmt, formatSaving, reportCharts } from '../lib/reports';
import { ErrorNotice, Loading, StatusBadge, TableWrap } from '../components';
import { SchedulesTable } from './ReportsPage';

const names = (xs: string[]) => (xs.length ? xs.join(', ') : 'none');

function Changes({ c }: { c: ReportContent }) {
  const ch = c.changes;
  if (!ch.previousReportId) return <p>This is the first report of this model: nothing to compare with yet.</p>;
  return (
    <>
      <p className="muted">
        Since the{' '}
        <Link to="/reports/$id" params={{ id: ch.previousReportId }}>
          previous report
        </Link>{' '}
        of {formatDateTime(ch.previousGeneratedAt)}; drift thresholds PSI ≥ {ch.thresholds.psi}, |ΔIV| ≥ {ch.thresholds.ivDrift}.
      </p>
      <dl className="changes" aria-label="changes since the previous report">
        <dt>Newly removable</dt>
        <dd>{names(ch.newlyRemovable)}</dd>
        <dt>No longer removable</dt>
        <dd>{names(ch.noLongerRemovable)}</dd>
        <dt>IV drift</dt>
        <dd>
          {ch.ivDrift.length ? ch.ivDrift.map((d) => `${d.feature} (${fmt(d.before)} → ${fmt(d.after)})`).join(', ') : 'none'}
        </dd>
        <dt>PSI drift</dt>
        <dd>
          {ch.psi
            .filter((p) => p.drift)
            .map((p) => `${p.feature} (${fmt(p.psi)})`)
            .join(', ') || 'none'}
        </dd>
        <dt>Features added</dt>
        <dd>{names(ch.featuresAdded.map((f) => f.name))}</dd>
      </dl>
    </>
  );
}

export function ReportPage({ id }: { id: string }) {
  const key = useKey();
  const q = useQuery({
    queryKey: ['report', key, id],
    queryFn: () => apiCall<Report>(key, `/reports/${id}`),
    enabled: key !== '',
    refetchInterval: (query) => (query.state.data?.status === 'running' ? 3000 : false),
  });
  const r = q.data;
  const schedule = useQuery({
    queryKey: ['report-schedules', key, r?.businessLine, r?.modelName],
    queryFn: () =>
      apiCall<ReportSchedule[]>(
        key,
        `/report-schedules?${new URLSearchParams({ businessLine: r!.businessLine, model: r!.modelName }).toString()}`,
      ),
    enabled: key !== '' && !!r,
  });
  if (q.error) return <ErrorNotice title="Could not load the report" error={q.error} />;
  if (!r) return <Loading what="the report" />;
  const c = r.content ?? null;
  const removable = c ? c.features.filter((f) => f.removable) : [];
  return (
    <>
      <p>
        <Link to="/reports">← reports</Link>
      </p>
      <h1>
        Report: {r.businessLine}/{r.modelName}
      </h1>
      <p>
        <StatusBadge status={r.status} /> {r.trigger} run for {formatDateTime(r.fireAt)} ·{' '}
        <Link to="/experiments/$id" params={{ id: r.experimentId }}>
          subtract experiment
        </Link>
      </p>
      {r.error ? <ErrorNotice title="The report failed" error={r.error} /> : null}
      {r.status === 'running' ? (
        <p className="muted">The subtract is running; this page refreshes until the report is ready.</p>
      ) : null}
      {c ? (
        <>
          <p className="muted">
            Model v{c.model.version} on sample set {c.sampleSet.name} ({c.sampleSet.rows} rows,{' '}
            {c.sampleSet.dataVersion ?? 'no data version'}
            {c.sampleSet.latest ? ', newer than the model’s own' : ''}). Full AUC {fmt(c.full.auc)}; estimated drop without the
            removable features {fmt(c.estimatedDrop?.mean)} [{fmt(c.estimatedDrop?.ciLow)}, {fmt(c.estimatedDrop?.ciHigh)}] (limit{' '}
            {fmt(c.maxDrop)})
            {c.retrainCheck ? `; retrained ${fmt(c.retrainCheck.fullAuc)} → ${fmt(c.retrainCheck.prunedAuc)}` : ''}.
          </p>
          <h2>
            {removable.length} of {c.features.length} features removable
          </h2>
          <TableWrap label="removable features">
            <table className="list">
              <thead>
                <tr>
                  <th scope="col">Feature</th>
                  <th scope="col">IV</th>
                  <th scope="col">Shuffle AUC drop</th>
                  <th scope="col">Interval</th>
                  <th scope="col">PSI vs previous</th>
                </tr>
              </thead>
              <tbody>
                {removable.map((f) => (
                  <tr key={f.feature}>
                    <td>{f.feature}</td>
                    <td>{fmt(f.iv)}</td>
                    <td>{fmt(f.shuffleDrop, 5)}</td>
                    <td>{f.shuffleCi ? `[${fmt(f.shuffleCi[0], 5)}, ${fmt(f.shuffleCi[1], 5)}]` : '—'}</td>
                    <td>{fmt(f.psi)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <h2>Changes since the previous report</h2>
          <Changes c={c} />
          <h2>Resources pruning would save</h2>
          <ul aria-label="savings">
            {c.savings.resources.map((s) => (
              <li key={s.resource}>
                {s.resource}: {formatSaving(s)}
              </li>
            ))}
          </ul>
          {c.savings.withoutCosts.length ? (
            <p className="muted">Removable features without a cost figure: {c.savings.withoutCosts.join(', ')}.</p>
          ) : null}
          <div className="charts">
            {reportCharts(c).map((chart) => (
              <ChartView key={chart.title} chart={chart} />
            ))}
          </div>
        </>
      ) : null}
      {r.deliveries && r.deliveries.length ? (
        <>
          <h2>Deliveries</h2>
          <TableWrap label="deliveries">
            <table className="list">
              <thead>
                <tr>
                  <th scope="col">Channel</th>
                  <th scope="col">To</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                </tr>
              </thead>
              <tbody>
                {r.deliveries.map((d) => (
                  <tr key={d.id}>
                    <td>{d.channel}</td>
                    <td>{d.target}</td>
                    <td>
                      <StatusBadge status={d.status} />
                    </td>
                    <td>{d.attempts}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        </>
      ) : null}
      <h2>Schedule of this model</h2>
      {schedule.data && schedule.data.length ? (
        <SchedulesTable schedules={schedule.data} />
      ) : (
        <p className="muted">{schedule.data ? 'This model has no report schedule.' : ''}</p>
      )}
    </>
  );
}
