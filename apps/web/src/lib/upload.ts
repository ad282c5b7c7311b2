/**
 * Multipart uploads with progress. fetch() reports no upload progress, so this uses XMLHttpRequest
 * (its `upload.onprogress`), with the same bearer key and error shape as apiCall. The state of an
 * upload is a pure reducer, unit-tested beside this file.
 */
import { ApiError, errorMessage, issuesOf } from './api';

export type UploadState =
  | { phase: 'idle' }
  | { phase: 'sending'; loaded: number; total: number | null }
  /** every byte is sent; the api is reading and storing the file */
  | { phase: 'processing'; total: number | null }
  | { phase: 'done' }
  | { phase: 'failed'; message: string }
  | { phase: 'cancelled' };

export type UploadEvent =
  | { type: 'start'; total: number | null }
  | { type: 'progress'; loaded: number; total: number | null }
  | { type: 'sent' }
  | { type: 'done' }
  | { type: 'failed'; message: string }
  | { type: 'cancelled' }
  | { type: 'reset' };

const ENDED = new Set<UploadState['phase']>(['done', 'failed', 'cancelled', 'idle']);

export function uploadReducer(s: UploadState, e: UploadEvent): UploadState {
  switch (e.type) {
    case 'start':
      return { phase: 'sending', loaded: 0, total: e.total };
    case 'progress':
      // late progress events after the end (or after cancel) change nothing; progress never goes back
      if (s.phase !== 'sending') return s;
      return { phase: 'sending', loaded: Math.max(s.loaded, e.loaded), total: e.total ?? s.total };
    case 'sent':
      return s.phase === 'sending' ? { phase: 'processing', total: s.total } : s;
    case 'done':
      return ENDED.has(s.phase) ? s : { phase: 'done' };
    case 'failed':
      return ENDED.has(s.phase) ? s : { phase: 'failed', message: e.message };
    case 'cancelled':
      return ENDED.has(s.phase) ? s : { phase: 'cancelled' };
    case 'reset':
      return { phase: 'idle' };
  }
}

/** True while the request is open (the cancel button is offered). */
export const uploadActive = (s: UploadState): boolean => s.phase === 'sending' || s.phase === 'processing';

/** 0..1 of the bytes sent, or null when the size is unknown. */
export function uploadFraction(s: UploadState): number | null {
  if (s.phase === 'processing' || s.phase === 'done') return 1;
  if (s.phase !== 'sending' || !s.total) return null;
  return Math.min(1, s.loaded / s.total);
}

/** 1536 → "1.5 KB" (1024-based, one decimal below 10). */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n) || n < 0) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}

/** The state in words, for the status line next to the bar. */
export function describeUpload(s: UploadState): string {
  switch (s.phase) {
    case 'idle':
      return '';
    case 'sending':
      return s.total
        ? `Uploading ${formatBytes(s.loaded)} of ${formatBytes(s.total)} (${Math.round((uploadFraction(s) ?? 0) * 100)}%)`
        : `Uploading ${formatBytes(s.loaded)}`;
    case 'processing':
      return 'Uploaded; the server is checking and storing the file…';
    case 'done':
      return 'Upload complete';
    case 'failed':
      return `Upload failed: ${s.message}`;
    case 'cancelled':
      return 'Upload cancelled; nothing was stored';
  }
}

/** The reason an upload was aborted by the user (so callers tell it from a failure). */
export class UploadCancelled extends Error {
  constructor() {
    super('upload cancelled');
    this.name = 'UploadCancelled';
  }
}

/**
 * POSTs `form` to /api/v1<path> with the bearer key, reporting progress; resolves with the parsed
 * JSON of a 2xx, rejects with ApiError (status, message, issues) otherwise, or UploadCancelled.
 */
export function uploadWithProgress<T>(
  key: string,
  path: string,
  form: FormData,
  on: (e: UploadEvent) => void,
): { promise: Promise<T>; cancel: () => void } {
  const xhr = new XMLHttpRequest();
  const promise = new Promise<T>((resolve, reject) => {
    xhr.open('POST', `/api/v1${path}`);
    xhr.setRequestHeader('authorization', `Bearer ${key}`);
    xhr.setRequestHeader('accept', 'application/json');
    xhr.upload.onprogress = (e) => on({ type: 'progress', loaded: e.loaded, total: e.lengthComputable ? e.total : null });
    xhr.upload.onload = () => on({ type: 'sent' });
    xhr.onload = () => {
      let body: unknown = null;
      try {
        body = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        body = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        on({ type: 'done' });
        resolve(body as T);
      } else {
        const err = new ApiError(xhr.status, errorMessage(xhr.status, body), issuesOf(body));
        on({ type: 'failed', message: err.message });
        reject(err);
      }
    };
    xhr.onerror = () => {
      const err = new ApiError(0, 'the connection to the server failed');
      on({ type: 'failed', message: err.message });
      reject(err);
    };
    xhr.onabort = () => {
      on({ type: 'cancelled' });
      reject(new UploadCancelled());
    };
    let total: number | null = null;
    for (const v of form.values()) if (typeof v !== 'string') total = (total ?? 0) + v.size;
    on({ type: 'start', total });
    xhr.send(form);
  });
  return { promise, cancel: () => xhr.abort() };
}
