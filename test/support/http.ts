import fs from 'node:fs';
import path from 'node:path';
import { waitUntil } from './test-env';

export interface HttpResult {
  status: number;
  body: Record<string, any> & { issues?: { path: string; message: string }[] };
  headers: Headers;
}

/**
 * A small client for the API under test: JSON bodies, multipart uploads, parsed JSON replies, sent
 * with `Authorization: Bearer <key>` (key() may return undefined to send none).
 */
export function apiClient(baseUrl: () => string, key: () => string | undefined) {
  const call = async (method: string, route: string, body?: unknown): Promise<HttpResult> => {
    const k = key();
    const res = await fetch(`${baseUrl()}/api/v1${route}`, {
      method,
      headers: {
        ...(k ? { authorization: `Bearer ${k}` } : {}),
        ...(body instanceof FormData || body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body instanceof FormData ? body : body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: HttpResult['body'];
    try {
      parsed = text ? (JSON.parse(text) as HttpResult['body']) : {};
    } catch {
      parsed = { text };
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };
  /** `fileName`: the name the client sends for the file (default: the file's own name) */
  const upload = async (route: string, file: string, fields: Record<string, string>, fileName?: string): Promise<HttpResult> => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    form.append('file', await fs.openAsBlob(file), fileName ?? path.basename(file));
    return call('POST', route, form);
  };
  /** Polls GET /experiments/:id until the experiment has ended (succeeded, failed or cancelled). */
  const finished = (id: string, timeoutMs: number, what: string): Promise<HttpResult['body']> =>
    waitUntil(
      async () => {
        const e = (await call('GET', `/experiments/${id}`)).body;
        return ['succeeded', 'failed', 'cancelled'].includes(String(e.status)) ? e : null;
      },
      timeoutMs,
      what,
    );
  return { call, upload, finished };
}
