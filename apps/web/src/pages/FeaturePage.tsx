import { useState } from 'react';
import { Link } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type Feature, type FeatureExperiment, type LedgerEntry, type LedgerFigure, type Page } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatDateTime, isTerminal } from '../lib/format';
import { summarizeProvenance } from '../lib/catalog';
import { ErrorNotice, KeyValueTable, Loading, StatusBadge, TableWrap } from '../components';
import { LocalPager, VerdictBadge } from '../catalog-components';
import { featureSource } from './FeaturesPage';

const PROVENANCE_PAGE_SIZE = 20;

function figure(f: LedgerFigure): string {
  if (f.value === null) return 'no figure';
  const v = Number.isInteger(f.value) ? String(f.value) : f.value.toPrecision(4);
  return `${v} ${f.unit}`;
}

/** One feature: its definition, its costs (the ledger) and its provenance (the experiments that measured it). */
export function FeaturePage({ id }: { id: string }) {
  const key = useKey();
  const feature = useQuery({
    queryKey: ['feature', key, id],
    queryFn: () => apiCall<Feature>(key, `/features/${id}`),
    enabled: key !== '',
  });
  const f = feature.data;
  return (
    <>
      <p>
        <Link to="/features">← Features</Link>
      </p>
      {feature.error ? <ErrorNotice title="Could not load the feature" error={feature.error} /> : null}
      {feature.isPending ? <Loading what="the feature" /> : null}
      {f ? (
        <>
          <h1>
            {f.name} <span className="muted h-sub">{f.businessLine}</span>
          </h1>
          {f.description ? <p>{f.description}</p> : null}
          <section aria-labelledby="definition">
            <h2 id="definition">Definition</h2>
            <dl className="facts">
              <dt>Kind</dt>
              <dd>{f.kind}</dd>
              <dt>Source</dt>
              <dd>{featureSource(f)}</dd>
              {f.expression ? (
                <>
                  <dt>Lineage</dt>
                  <dd>
                    reads {f.expression.lineage.columns.join(', ') || 'no column'}
                    {f.expression.lineage.refs.length ? `; features ${f.expression.lineage.refs.join(', ')}` : ''}
                    {f.expression.lineage.tables?.length
                      ? ` (${f.expression.lineage.tables.map((t) => `${t.feature} from table ${t.table}, as of each impression`).join('; ')})`
                      : ''}
                    {'; '}
                    {f.expression.lineage.historySeconds === null
                      ? 'all earlier rows'
                      : f.expression.lineage.historySeconds
                        ? `earlier rows of the last ${f.expression.lineage.historySeconds / 3600} h`
                        : 'the impression row only'}
                    {f.expression.lineage.readsLabel ? ' (their clicks too)' : ''}
                  </dd>
                </>
              ) : null}
              <dt>Transform</dt>
              <dd>
                <code>{JSON.stringify(f.transform)}</code>
              </dd>
              <dt>Owner</dt>
              <dd>{f.owner}</dd>
              <dt>Registered</dt>
              <dd>{formatDateTime(f.createdAt)}</dd>
              <dt>Updated</dt>
              <dd>{formatDateTime(f.updatedAt)}</dd>
            </dl>
          </section>
          <Costs feature={f} />
          <Provenance feature={f} />
          <section aria-labelledby="raw">
            <h2 id="raw">As stored</h2>
            <KeyValueTable value={f} label="feature" />
          </section>
        </>
      ) : null}
    </>
  );
}

function Costs({ feature }: { feature: Feature }) {
  const key = useKey();
  const ledger = useQuery({
    queryKey: ['costs', key, feature.businessLine],
    queryFn: () =>
      apiCall<{ features: LedgerEntry[]; candidatesPerRequest: number }>(
        key,
        `/features/costs?businessLine=${encodeURIComponent(feature.businessLine)}`,
      ),
    enabled: key !== '',
  });
  const row = ledger.data?.features.find((x) => x.id === feature.id);
  return (
    <section aria-labelledby="costs">
      <h2 id="costs">Costs</h2>
      {ledger.error ? <ErrorNotice title="Could not load the cost ledger" error={ledger.error} /> : null}
      {ledger.isPending ? <Loading what="costs" /> : null}
      {ledger.data && (!row || row.noCost) ? (
        <p className="muted" role="status">
          No cost figures yet: declare them (<code>PATCH /api/v1/features/{feature.id}</code> with <code>costs</code>) or measure
          them (<code>abacus features costs --line {feature.businessLine} --measure</code>).
        </p>
      ) : null}
      {row && !row.noCost ? (
        <TableWrap label="costs">
          <table className="list costs">
            <thead>
              <tr>
                <th scope="col">Resource</th>
                <th scope="col">Figure</th>
                <th scope="col">Source</th>
                <th scope="col">When</th>
                <th scope="col">How</th>
              </tr>
            </thead>
            <tbody>
              {(['storage', 'communication', 'compute'] as const).map((r) => (
                <tr key={r} data-resource={r}>
                  <th scope="row">{r}</th>
                  <td className="num">{figure(row[r])}</td>
                  <td>{row[r].source ?? '—'}</td>
                  <td className="nowrap">{formatDateTime(row[r].measuredAt)}</td>
                  <td className="wrap small">{row[r].how ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      {ledger.data ? (
        <p className="muted small">
          Entity level {row?.entity ?? 'unknown'}; communication counts {ledger.data.candidatesPerRequest} candidates per request
          for an item feature.
        </p>
      ) : null}
    </section>
  );
}

function Provenance({ feature }: { feature: Feature }) {
  const key = useKey();
  const [page, setPage] = useState(1);
  const list = useQuery({
    queryKey: ['feature-experiments', key, feature.id, page],
    queryFn: () =>
      apiCall<Page<FeatureExperiment>>(key, `/features/${feature.id}/experiments?page=${page}&pageSize=${PROVENANCE_PAGE_SIZE}`),
    enabled: key !== '',
    placeholderData: (prev) => prev,
    // a running experiment's verdict arrives when it ends
    refetchInterval: (q) => (q.state.data?.items.some((e) => !isTerminal(e.status)) ? 3000 : false),
  });
  return (
    <section aria-labelledby="provenance">
      <h2 id="provenance">Provenance</h2>
      <p className="muted">
        Every experiment of {feature.businessLine} that measured <code>{feature.name}</code>, newest first, with what it said
        about it.
      </p>
      {list.error ? <ErrorNotice title="Could not load the experiments" error={list.error} /> : null}
      {list.isPending ? <Loading what="experiments" /> : null}
      {list.data ? (
        <p role="status" className="result-count">
          {summarizeProvenance(list.data.items, list.data.total)}
        </p>
      ) : null}
      {list.data && list.data.total === 0 ? (
        <div className="empty">
          <p>
            Measure it: a <code>score</code> experiment gives its information value, <code>add</code> whether it earns its place
            in a model.{' '}
            <Link to="/experiments/new" search={{ kind: 'score', line: feature.businessLine }}>
              New experiment
            </Link>
          </p>
        </div>
      ) : null}
      {list.data && list.data.items.length > 0 ? (
        <>
          <TableWrap label="experiments that measured the feature">
            <table className="list provenance">
              <thead>
                <tr>
                  <th scope="col">Experiment</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Status</th>
                  <th scope="col">Verdict</th>
                  <th scope="col">What it measured</th>
                  <th scope="col">Owner</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((e) => (
                  <tr key={e.id} data-experiment={e.id} data-kind={e.kind}>
                    <td className="wrap">
                      <Link to="/experiments/$id" params={{ id: e.id }}>
                        {e.name || e.id.slice(0, 8)}
                      </Link>
                    </td>
                    <td>{e.kind}</td>
                    <td>
                      <StatusBadge status={e.status} />
                    </td>
                    <td>
                      <VerdictBadge verdict={e.verdict} />
                    </td>
                    <td className="wrap">{e.detail}</td>
                    <td>{e.owner}</td>
                    <td className="nowrap">{formatDateTime(e.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <LocalPager
            page={page}
            pageSize={PROVENANCE_PAGE_SIZE}
            total={list.data.total}
            onPage={setPage}
            label="experiment pages"
          />
        </>
      ) : null}
    </section>
  );
}
