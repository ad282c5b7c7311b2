import fs from 'node:fs';
import path from 'node:path';

export interface HttpResult {
  status: number;
  body: Record<string, any> & { issues?: { path: string; message: string }[] };
}

/** A small client for the API under test: JSON bodies, multipart uploads, parsed JSON replies. */
export function apiClient(baseUrl: () => string) {
  const call = async (method: string, route: string, body?: unknown): Promise<HttpResult> => {
    const res = await fetch(`${baseUrl()}/api/v1${route}`, {
      method,
      headers: body instanceof FormData || body === undefined ? {} : { 'content-type': 'application/json' },
      body: body instanceof FormData ? body : body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as HttpResult['body'] };
  };
  /** `fileName`: the name the client sends for the file (default: the file's own name) */
  const upload = async (route: string, file: string, fields: Record<string, string>, fileName?: string): Promise<HttpResult> => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    form.append('file', await fs.openAsBlob(file), fileName ?? path.basename(file));
    return call('POST', route, form);
  };
  return { call, upload };
}
