import { useMemo, useState, type ReactNode } from 'react';
import { Link } from '@tanstack/react-router';
import { saveBlob } from './lib/download';
import { flattenForTable, formatProgress, formatRange, pageCount, splitRecordTables } from './lib/format';

export function StatusBadge({ status }: { status: string }) {
  return <span className={`status status-${status}`}>{status}</span>;
}

export function Progress({ value, message }: { value: number; message?: string }) {
  const pct = formatProgress(value);
  return (
    <span className="progress">
      <progress max={1} value={Number.isFinite(value) ? value : 0} aria-label={`progress ${pct}`} />
      <span className="progress-text">{pct}</span>
      {message ? <span className="muted progress-message">{message}</span> : null}
    </span>
  );
}

export function ErrorNotice({ title, error }: { title: string; error: unknown }) {
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div className="notice notice-error" role="alert">
      <strong>{title}:</strong> {message}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}

/** A horizontally scrollable table frame (tables keep their columns on narrow screens). */
export function TableWrap({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="table-wrap" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

/** A JSON value as a key/value table, its lists of records as tables; the JSON itself, formatted, for all of it. */
export function KeyValueTable({ value, label }: { value: unknown; label: string }) {
  if (value === null || value === undefined) return <p className="muted">none</p>;
  const { rest, tables } = splitRecordTables(value);
  const restEmpty = typeof rest === 'object' && rest !== null && !Array.isArray(rest) && Object.keys(rest).length === 0;
  const { rows, truncated } = flattenForTable(rest);
  return (
    <>
      {restEmpty ? null : (
        <TableWrap label={label}>
          <table className="kv" aria-label={label}>
            <tbody>
              {rows.map(([k, v]) => (
                <tr key={k}>
                  <th scope="row">{k}</th>
                  <td>{v}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {tables.map((t) => (
        <section key={t.key} aria-label={`${label}: ${t.key}`}>
          <h3>
            {t.key} <span className="muted h-sub">({t.rows.length + t.more})</span>
          </h3>
          <TableWrap label={`${label} ${t.key}`}>
            <table className="list" aria-label={`${label} ${t.key}`}>
              <thead>
                <tr>
                  {t.columns.map((c) => (
                    <th scope="col" key={c}>
                      {c}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {t.rows.map((r, i) => (
                  <tr key={i}>
                    {r.map((v, j) => (
                      <td key={t.columns[j]}>{v}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          {t.more ? <p className="muted">and {t.more} more rows: see the JSON below</p> : null}
        </section>
      ))}
      <details className="json">
        <summary>{truncated ? `${label}: the first ${rows.length} values above; all of it as JSON` : `${label} as JSON`}</summary>
        <pre>{JSON.stringify(value, null, 2)}</pre>
      </details>
    </>
  );
}

/**
 * A JSON value behind a collapsed disclosure (its size in the summary), with buttons to copy it to the
 * clipboard and to download it as a file: for results too large to read as tables on a page.
 */
export function RawJson({ value, label, fileName }: { value: unknown; label: string; fileName: string }) {
  const [copied, setCopied] = useState<'idle' | 'copied' | 'failed'>('idle');
  const text = useMemo(() => JSON.stringify(value, null, 2), [value]);
  const bytes = new TextEncoder().encode(text).length;
  const size = bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KB`;
  const copy = () => {
    navigator.clipboard.writeText(text).then(
      () => setCopied('copied'),
      () => setCopied('failed'),
    );
  };
  const download = () => saveBlob(new Blob([text], { type: 'application/json' }), fileName);
  return (
    <details className="json raw-json" aria-label={label}>
      <summary>
        {label} as JSON <span className="muted">({size})</span>
      </summary>
      <p className="raw-json-actions">
        <button type="button" onClick={copy}>
          Copy
        </button>{' '}
        <button type="button" onClick={download}>
          Download {fileName}
        </button>{' '}
        <span role="status" className="muted small">
          {copied === 'copied' ? 'copied to the clipboard' : copied === 'failed' ? 'the browser refused the clipboard' : ''}
        </span>
      </p>
      <pre>{text}</pre>
    </details>
  );
}

/** Previous / next page links that keep the page's other search parameters. */
export function Pager({
  page,
  pageSize,
  total,
  to,
}: {
  page: number;
  pageSize: number;
  total: number;
  to: '/data' | '/experiments';
}) {
  const pages = pageCount(total, pageSize);
  return (
    <nav className="pager" aria-label="pages">
      {page > 1 ? (
        <Link to={to} search={(prev: Record<string, unknown>) => ({ ...prev, page: page - 1 > 1 ? page - 1 : undefined })}>
          ← Previous
        </Link>
      ) : (
        <span className="muted" aria-disabled="true">
          ← Previous
        </span>
      )}
      <span>
        Page {page} of {pages} ({formatRange(page, pageSize, total)})
      </span>
      {page < pages ? (
        <Link to={to} search={(prev: Record<string, unknown>) => ({ ...prev, page: page + 1 })}>
          Next →
        </Link>
      ) : (
        <span className="muted" aria-disabled="true">
          Next →
        </span>
      )}
    </nav>
  );
}
