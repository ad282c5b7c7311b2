/** Pieces the catalog pages share: upload progress, field errors, verdict badges, pagers. */
import { useCallback, useReducer, useRef } from 'react';
import { Link } from '@tanstack/react-router';
import { describeUpload, uploadActive, uploadFraction, uploadReducer, uploadWithProgress, type UploadState } from './lib/upload';
import { verdictTone } from './lib/catalog';
import { formatRange, pageCount } from './lib/format';

/** An upload's state and the two things a form does with it: start one, cancel it. */
export function useUpload() {
  const [state, dispatch] = useReducer(uploadReducer, { phase: 'idle' } as UploadState);
  const cancelRef = useRef<(() => void) | null>(null);
  const start = useCallback(<T,>(key: string, path: string, form: FormData): Promise<T> => {
    const { promise, cancel } = uploadWithProgress<T>(key, path, form, dispatch);
    cancelRef.current = cancel;
    return promise.finally(() => {
      cancelRef.current = null;
    });
  }, []);
  const cancel = useCallback(() => cancelRef.current?.(), []);
  const reset = useCallback(() => dispatch({ type: 'reset' }), []);
  return { state, start, cancel, reset };
}

/** The bar, the bytes sent in words (announced politely) and, while the request is open, a cancel button. */
export function UploadProgress({ state, onCancel, label }: { state: UploadState; onCancel: () => void; label: string }) {
  if (state.phase === 'idle') return null;
  const fraction = uploadFraction(state);
  return (
    <div className={`upload-progress upload-${state.phase}`} data-upload-phase={state.phase}>
      {uploadActive(state) ? (
        <progress
          max={1}
          {...(fraction === null || state.phase === 'processing' ? {} : { value: fraction })}
          aria-label={`${label} progress`}
        />
      ) : null}
      <span role="status" className="upload-text">
        {describeUpload(state)}
      </span>
      {uploadActive(state) ? (
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel upload
        </button>
      ) : null}
    </div>
  );
}

/** The messages of one field, under it (its input names this id in aria-describedby). */
export function FieldMessages({ id, messages }: { id: string; messages: string[] | undefined }) {
  if (!messages?.length) return null;
  return (
    <span id={id} className="field-error" role="alert">
      {messages.join('; ')}
    </span>
  );
}

/** aria-invalid and aria-describedby of an input with (or without) messages and a hint. */
export function ariaFor(id: string, messages: string[] | undefined, hintId?: string) {
  const described = [messages?.length ? `${id}-error` : null, hintId ?? null].filter(Boolean).join(' ');
  return {
    'aria-invalid': messages?.length ? true : undefined,
    'aria-describedby': described || undefined,
  } as const;
}

export function VerdictBadge({ verdict }: { verdict: string }) {
  return <span className={`verdict-badge tone-${verdictTone(verdict)}`}>{verdict}</span>;
}

/** Previous / next buttons over pages held in this page's state (lists the api does not page). */
export function LocalPager({
  page,
  pageSize,
  total,
  onPage,
  label,
}: {
  page: number;
  pageSize: number;
  total: number;
  onPage: (p: number) => void;
  label: string;
}) {
  const pages = pageCount(total, pageSize);
  if (pages <= 1) return null;
  return (
    <nav className="pager" aria-label={label}>
      <button type="button" className="secondary" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        ← Newer
      </button>
      <span>
        Page {page} of {pages} ({formatRange(page, pageSize, total)})
      </span>
      <button type="button" className="secondary" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        Older →
      </button>
    </nav>
  );
}

/** Previous / next links of the features list that keep its other search parameters. */
export function FeaturesPager({ page, pageSize, total }: { page: number; pageSize: number; total: number }) {
  const pages = pageCount(total, pageSize);
  return (
    <nav className="pager" aria-label="pages">
      {page > 1 ? (
        <Link to="/features" search={(prev: Record<string, unknown>) => ({ ...prev, page: page - 1 > 1 ? page - 1 : undefined })}>
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
        <Link to="/features" search={(prev: Record<string, unknown>) => ({ ...prev, page: page + 1 })}>
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
