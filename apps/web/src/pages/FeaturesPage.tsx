import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from '@tanstack/react-router';
import { useQuery } from '@tanstack/react-query';
import { apiCall, type BusinessLine, type Feature, type Page } from '../lib/api';
import { useKey } from '../lib/auth';
import { formatCount, formatDateTime } from '../lib/format';
import {
  FEATURE_KINDS,
  FEATURE_ROLES,
  FEATURES_PAGE_SIZE,
  featuresQuery,
  hasFeatureFilters,
  parseFeaturesSearch,
  type FeaturesSearch,
} from '../lib/catalog';
import { ErrorNotice, Loading, TableWrap } from '../components';
import { FeaturesPager } from '../catalog-components';
import { RegisterFeature } from './RegisterFeature';

/** Where a feature's values come from: "users.age (key user_id)", or a sample-set column. */
export function featureSource(f: Pick<Feature, 'sourceTable' | 'sourceColumn' | 'entityKey' | 'name'>): string {
  if (f.sourceTable) return `${f.sourceTable}.${f.sourceColumn ?? f.name}${f.entityKey ? ` (key ${f.entityKey})` : ''}`;
  return `sample-set column ${f.sourceColumn ?? f.name}`;
}

/** The feature registry: search, filters kept in the URL, pages; and the form that registers a candidate. */
export function FeaturesPage({ search }: { search: FeaturesSearch }) {
  const key = useKey();
  const q = featuresQuery(search);
  const list = useQuery({
    queryKey: ['features', key, q],
    queryFn: () => apiCall<Page<Feature>>(key, `/features?${q}`),
    enabled: key !== '',
    placeholderData: (prev) => prev,
  });
  const lines = useQuery({
    queryKey: ['business-lines', key],
    queryFn: () => apiCall<BusinessLine[]>(key, '/business-lines'),
    enabled: key !== '',
    staleTime: 60_000,
  });
  const lineNames = (lines.data ?? []).map((l) => l.name);
  return (
    <>
      <div className="page-head">
        <h1>Features</h1>
        <a href="#register" className="button-link primary">
          Register a candidate
        </a>
      </div>
      <p className="muted">
        The registry: every feature of your business lines, where its values come from, and (on its page) its costs and the
        experiments that measured it. From the command line: <code>abacus features list</code>.
      </p>
      <FeatureFilters key={JSON.stringify(search)} search={search} lineOptions={lineNames} />
      {list.error ? <ErrorNotice title="Could not load features" error={list.error} /> : null}
      {list.isPending ? <Loading what="features" /> : null}
      {list.data && list.data.total === 0 ? (
        hasFeatureFilters(search) ? (
          <div className="empty" role="status">
            <p>
              <strong>No features match these filters.</strong>{' '}
              <Link to="/features" search={{}}>
                Clear the filters
              </Link>
            </p>
          </div>
        ) : (
          <div className="empty" role="status">
            <p>
              <strong>No features registered yet</strong> — upload a feature table or register a column with the form below, or
              run the demo (<code>bash scripts/quickstart.sh</code>), which registers the simulated world's features.
            </p>
          </div>
        )
      ) : null}
      {list.data && list.data.items.length > 0 ? (
        <>
          <p role="status" className="result-count">
            {formatCount(list.data.total)} feature{list.data.total === 1 ? '' : 's'}
            {hasFeatureFilters(search) ? ' match' : ''}
          </p>
          <TableWrap label="features">
            <table className="list features">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Line</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Source</th>
                  <th scope="col">Transform</th>
                  <th scope="col">Owner</th>
                  <th scope="col">Registered</th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((f) => (
                  <tr key={f.id} data-feature={f.name}>
                    <td className="nowrap">
                      <Link to="/features/$id" params={{ id: f.id }}>
                        {f.name}
                      </Link>
                    </td>
                    <td>{f.businessLine}</td>
                    <td>{f.kind}</td>
                    <td className="wrap">{featureSource(f)}</td>
                    <td>{f.transform.type}</td>
                    <td>{f.owner}</td>
                    <td className="nowrap">{formatDateTime(f.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <FeaturesPager page={search.page ?? 1} pageSize={FEATURES_PAGE_SIZE} total={list.data.total} />
        </>
      ) : null}
      <RegisterFeature lineOptions={lineNames} />
    </>
  );
}

function FeatureFilters({ search, lineOptions }: { search: FeaturesSearch; lineOptions: string[] }) {
  const navigate = useNavigate();
  const [q, setQ] = useState(search.q ?? '');
  const [line, setLine] = useState(search.line ?? '');
  const [kind, setKind] = useState<string>(search.kind ?? '');
  const [owner, setOwner] = useState(search.owner ?? '');
  const [role, setRole] = useState<string>(search.role ?? '');
  const options = [...new Set([...lineOptions, ...(search.line ? [search.line] : [])])].sort();

  function apply(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    void navigate({ to: '/features', search: parseFeaturesSearch({ q, line, kind, owner, role }) });
  }

  return (
    <form className="filters filters-5" onSubmit={apply} aria-label="filter features" role="search" noValidate>
      <div className="field">
        <label htmlFor="feature-q">Name contains</label>
        <input id="feature-q" name="q" type="search" value={q} onChange={(e) => setQ(e.target.value)} autoComplete="off" />
      </div>
      <div className="field">
        <label htmlFor="feature-line">Business line</label>
        <select id="feature-line" name="line" value={line} onChange={(e) => setLine(e.target.value)}>
          <option value="">any line</option>
          {options.map((l) => (
            <option key={l} value={l}>
              {l}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor="feature-kind">Kind</label>
        <select id="feature-kind" name="kind" value={kind} onChange={(e) => setKind(e.target.value)}>
          <option value="">any kind</option>
          {FEATURE_KINDS.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor="feature-owner">Owner</label>
        <input id="feature-owner" name="owner" value={owner} onChange={(e) => setOwner(e.target.value)} autoComplete="off" />
      </div>
      <div className="field">
        <label htmlFor="feature-role">Role</label>
        <select
          id="feature-role"
          name="role"
          value={role}
          onChange={(e) => setRole(e.target.value)}
          aria-describedby="feature-role-help"
        >
          <option value="">any role</option>
          {FEATURE_ROLES.map((r) => (
            <option key={r} value={r}>
              {r === 'candidate' ? 'candidate (in no model)' : 'in a registered model'}
            </option>
          ))}
        </select>
        <span id="feature-role-help" className="muted small hint">
          by the registered models of its line
        </span>
      </div>
      <div className="actions">
        <button type="submit">Apply filters</button>
        <Link to="/features" search={{}} className="button-link">
          Clear
        </Link>
      </div>
    </form>
  );
}
