import { useState } from 'react';
import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type ActiveTier, type ServedModel, type ServingSwitch } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatDateTime } from '../lib/format';
import { SWITCH_LOG_PAGE_SIZE, formatDelivery, formatSignals, switchLogPage } from '../lib/catalog';
import { ErrorNotice, KeyValueTable, Loading, TableWrap } from '../components';
import { LocalPager } from '../catalog-components';
import { SERVING_POLL_MS } from './ServingPage';
import { tierAlias } from '@abacus/workflows/browser';

/** One served model: the active tier (from the api's cache), its tiers, policy and pin, and the switch log. */
export function ServedModelPage({ id }: { id: string }) {
  const key = useKey();
  const served = useQuery({
    queryKey: ['serving', key, id],
    queryFn: () => apiCall<ServedModel>(key, `/serving/${id}`),
    enabled: key !== '',
    refetchInterval: SERVING_POLL_MS,
  });
  const active = useQuery({
    queryKey: ['serving-active', key, id],
    queryFn: () => apiCall<ActiveTier>(key, `/serving/${id}/active`),
    enabled: key !== '',
    refetchInterval: SERVING_POLL_MS,
  });
  const s = served.data;
  const a = active.data;
  return (
    <>
      <p>
        <Link to="/serving">← Serving</Link>
      </p>
      {served.error ? <ErrorNotice title="Could not load the served model" error={served.error} /> : null}
      {served.isPending ? <Loading what="the served model" /> : null}
      {s ? (
        <>
          <h1>
            {s.modelName} <span className="muted h-sub">{s.businessLine} · served</span>
          </h1>
          <section aria-labelledby="active">
            <h2 id="active">Active tier</h2>
            {active.error ? <ErrorNotice title="Could not load the active tier" error={active.error} /> : null}
            {a ? (
              <dl className="facts" data-active-tier={a.tier}>
                <dt>Tier</dt>
                <dd>
                  <strong>{tierAlias(a.tier)}</strong>{' '}
                  <Link to="/models/$id" params={{ id: a.modelId }}>
                    v{a.version}
                  </Link>
                </dd>
                <dt>Since</dt>
                <dd>{formatDateTime(a.since)}</dd>
                <dt>Pinned</dt>
                <dd>
                  {a.pinned
                    ? `${tierAlias(a.pinned.tier)} by ${a.pinned.by ?? 'unknown'}${a.pinned.reason ? `: ${a.pinned.reason}` : ''}`
                    : 'no: the policy decides'}
                </dd>
                <dt>Features ({a.features.length})</dt>
                <dd className="wrap">{a.features.join(', ')}</dd>
                <dt>Last signals</dt>
                <dd>
                  {formatSignals(s.lastSignals)}
                  {s.lastSignalAt ? <span className="muted"> at {formatDateTime(s.lastSignalAt)}</span> : null}
                </dd>
                <dt>Tiers</dt>
                <dd>{s.tiers.map((t) => (t === a.tier ? `[${tierAlias(t)}]` : tierAlias(t))).join(' → ')}</dd>
                <dt>Webhook</dt>
                <dd className="wrap">
                  <code>{s.webhookUrl}</code>
                </dd>
              </dl>
            ) : null}
          </section>
          {s.policy.schedule ? <ScheduleSection served={s} /> : null}
          <section aria-labelledby="policy">
            <h2 id="policy">Switch policy</h2>
            <KeyValueTable value={s.policy} label="policy" />
          </section>
          <SwitchLog id={id} />
        </>
      ) : null}
    </>
  );
}

const DAY_NAMES: Record<string, string> = { mon: 'Mon', tue: 'Tue', wed: 'Wed', thu: 'Thu', fri: 'Fri', sat: 'Sat', sun: 'Sun' };

/** The windows in which a tier is preferred, and which one is open now. */
function ScheduleSection({ served }: { served: ServedModel }) {
  const schedule = served.policy.schedule!;
  const now = served.scheduleNow ?? null;
  return (
    <section aria-labelledby="schedule">
      <h2 id="schedule">Schedule</h2>
      <p role="status" data-schedule-now={now ? now.index : 'none'}>
        {now
          ? `Now inside the window ${now.label}: ${tierAlias(now.tier)} preferred (opened ${formatDateTime(new Date(now.startedAt).toISOString())}).`
          : `Now outside every window: the full model at best (times in ${schedule.timeZone}).`}
      </p>
      <p className="muted">
        When a window opens the model switches to its tier unless a load signal is over its limit; load still steps down inside a
        window, and when it closes a tier above the full model steps back down. Cooldown and dwell hold for every switch.
      </p>
      <TableWrap label="schedule windows">
        <table className="list schedule">
          <thead>
            <tr>
              <th scope="col">Days</th>
              <th scope="col">From</th>
              <th scope="col">To</th>
              <th scope="col">Preferred tier</th>
            </tr>
          </thead>
          <tbody>
            {schedule.windows.map((w, i) => (
              <tr key={i} data-window={i} className={now?.index === i ? 'current' : undefined}>
                <td>{w.days.length === 7 ? 'every day' : w.days.map((d) => DAY_NAMES[d] ?? d).join(', ')}</td>
                <td className="nowrap">{w.from}</td>
                <td className="nowrap">
                  {w.to}
                  {w.to < w.from ? <span className="muted"> (next day)</span> : null}
                </td>
                <td className="nowrap">
                  <strong>{tierAlias(w.tier)}</strong>
                  {now?.index === i ? <span className="muted"> · open now</span> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
    </section>
  );
}

function SwitchLog({ id }: { id: string }) {
  const key = useKey();
  const [page, setPage] = useState(1);
  const log = useQuery({
    queryKey: ['serving-log', key, id],
    queryFn: () => apiCall<ServingSwitch[]>(key, `/serving/${id}/log`),
    enabled: key !== '',
    refetchInterval: SERVING_POLL_MS,
  });
  const view = switchLogPage(log.data ?? [], page);
  return (
    <section aria-labelledby="switch-log">
      <h2 id="switch-log">Switch log</h2>
      <p className="muted">Every tier switch, newest first, with the signals that triggered it and its webhook deliveries.</p>
      {log.error ? <ErrorNotice title="Could not load the switch log" error={log.error} /> : null}
      {log.isPending ? <Loading what="the switch log" /> : null}
      {log.data && log.data.length === 0 ? (
        <p className="empty" role="status">
          No switches yet: the model is on the tier it started on.
        </p>
      ) : null}
      {log.data && log.data.length > 0 ? (
        <>
          <p role="status" className="result-count">
            {log.data.length} switch{log.data.length === 1 ? '' : 'es'}
          </p>
          <TableWrap label="switch log">
            <table className="list switch-log">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">From → to</th>
                  <th scope="col">Reason</th>
                  <th scope="col">Signals</th>
                  <th scope="col">By</th>
                  <th scope="col">Webhook</th>
                </tr>
              </thead>
              <tbody>
                {view.items.map((sw) => (
                  <tr key={sw.id} data-switch={`${sw.fromTier ?? ''}->${sw.toTier}`}>
                    <td className="nowrap">{formatDateTime(sw.at)}</td>
                    <td className="nowrap">
                      {sw.fromTier === null ? 'start' : tierAlias(sw.fromTier)} → {tierAlias(sw.toTier)}
                    </td>
                    <td className="wrap">{sw.reason}</td>
                    <td className="wrap">{formatSignals(sw.signals)}</td>
                    <td>{sw.manual ? `${sw.actor} (manual)` : sw.actor}</td>
                    <td className="wrap">
                      {sw.deliveries.length
                        ? sw.deliveries.map((d) => (
                            <div key={d.id} className={`delivery delivery-${d.status}`}>
                              {formatDelivery(d)}
                            </div>
                          ))
                        : '—'}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <LocalPager
            page={view.page}
            pageSize={SWITCH_LOG_PAGE_SIZE}
            total={log.data.length}
            onPage={setPage}
            label="switch log pages"
          />
        </>
      ) : null}
    </section>
  );
}
