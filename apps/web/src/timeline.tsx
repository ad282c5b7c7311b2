import { formatClock, formatDuration, layoutTimeline, type TimelineTrial } from './lib/timeline';
import { StatusBadge, TableWrap } from './components';

/*
 * The trials on a time axis, drawn as SVG like charts.tsx: geometry in attributes, colours from
 * classes in styles.css (no inline style: the page's CSP holds). Accessible as an image with a
 * title and a description, each row with its own title, and the table below it says the same in text.
 */

const W = 720;
const LEFT = 150;
const RIGHT = W - 20;
const ROW = 22;
const TOP = 8;

export function TrialTimeline({ trials, now, experimentName }: { trials: TimelineTrial[]; now: number; experimentName: string }) {
  const layout = layoutTimeline(trials, now, LEFT, RIGHT);
  if (!layout.rows.length) return null;
  const bottom = TOP + layout.rows.length * ROW;
  const h = bottom + 34;
  const counts = new Map<string, number>();
  for (const t of trials) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  const summary = [...counts.entries()].map(([s, n]) => `${n} ${s}`).join(', ');
  return (
    <figure className="timeline-figure">
      <svg className="chart timeline" viewBox={`0 0 ${W} ${h}`} role="img" aria-labelledby="timeline-title timeline-desc">
        <title id="timeline-title">{`Trials of ${experimentName} over time`}</title>
        <desc id="timeline-desc">{`${trials.length} trials (${summary}) over ${formatDuration(layout.end - layout.start)}. ${layout.rows.map((r) => r.description).join('. ')}.`}</desc>
        {layout.ticks.map((t) => (
          <g key={t.label} className="chart-tick">
            <line x1={t.x} x2={t.x} y1={TOP} y2={bottom} className="chart-grid" />
            <text x={t.x} y={bottom + 14} textAnchor="middle">
              {t.label}
            </text>
          </g>
        ))}
        {layout.rows.map((r, i) => {
          const y = TOP + i * ROW;
          return (
            <g key={r.trial.id} className={`timeline-row trial-${r.trial.status}`} data-trial-seq={r.trial.seq}>
              <title>{r.description}</title>
              <text x={LEFT - 8} y={y + ROW / 2 + 4} textAnchor="end" className="chart-label">
                {r.label}
              </text>
              {r.spans.map((s) => (
                <rect
                  key={s.phase}
                  x={s.x}
                  y={y + (s.phase === 'queued' ? 8 : 4)}
                  width={Math.max(s.width, 1)}
                  height={s.phase === 'queued' ? ROW - 16 : ROW - 8}
                  className={`span span-${s.phase}${s.open ? ' span-open' : ''}`}
                />
              ))}
              {r.endX !== null ? <circle cx={r.endX} cy={y + ROW / 2} r={4} className="span-end" /> : null}
            </g>
          );
        })}
        <text x={(LEFT + RIGHT) / 2} y={h - 4} textAnchor="middle" className="chart-axis">
          time since the first trial was queued
        </text>
      </svg>
      <figcaption>
        <span className="timeline-key">
          <svg width="18" height="10" aria-hidden="true">
            <rect x="0" y="3" width="18" height="5" className="span span-queued" />
          </svg>{' '}
          queued (waiting for a worker or for the trials it needs)
        </span>{' '}
        <span className="timeline-key">
          <svg width="18" height="10" aria-hidden="true">
            <rect x="0" y="0" width="18" height="10" className="span span-running" />
          </svg>{' '}
          running
        </span>{' '}
        <span className="timeline-key">
          <svg width="10" height="10" aria-hidden="true">
            <circle cx="5" cy="5" r="4" className="span-end" />
          </svg>{' '}
          ended (coloured by status)
        </span>
      </figcaption>
    </figure>
  );
}

/** The same trials as a table: timestamps, how long each waited and ran, attempts, backend, error. */
export function TrialTable({
  trials,
  now,
}: {
  trials: (TimelineTrial & { progress: number; error: string | null })[];
  now: number;
}) {
  const layout = layoutTimeline(trials, now, 0, 1);
  const byId = new Map(layout.rows.map((r) => [r.trial.id, r]));
  return (
    <TableWrap label="trials">
      <table className="list trials">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Kind</th>
            <th scope="col">Status</th>
            <th scope="col">Progress</th>
            <th scope="col">Queued</th>
            <th scope="col">Started</th>
            <th scope="col">Finished</th>
            <th scope="col">Waited</th>
            <th scope="col">Ran</th>
            <th scope="col">Attempts</th>
            <th scope="col">Backend</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {trials.map((t) => {
            const row = byId.get(t.id);
            const wait = row?.spans.find((s) => s.phase === 'queued');
            const run = row?.spans.find((s) => s.phase === 'running');
            return (
              <tr key={t.id} data-trial-seq={t.seq}>
                <td>{t.seq}</td>
                <td>{t.kind}</td>
                <td>
                  <StatusBadge status={t.status} />
                </td>
                <td>{`${Math.round(Math.min(1, Math.max(0, t.progress)) * 100)}%`}</td>
                <td className="nowrap">{formatClock(t.createdAt)}</td>
                <td className="nowrap">{formatClock(t.startedAt)}</td>
                <td className="nowrap">{formatClock(t.finishedAt)}</td>
                <td className="nowrap">{wait ? `${formatDuration(wait.to - wait.from)}${wait.open ? ' so far' : ''}` : '—'}</td>
                <td className="nowrap">{run ? `${formatDuration(run.to - run.from)}${run.open ? ' so far' : ''}` : '—'}</td>
                <td>{t.attempts}</td>
                <td>{t.backend ?? '—'}</td>
                <td className="wrap">{t.error ?? ''}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </TableWrap>
  );
}
