import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { waitUntil } from './test-env';

/**
 * ABACUS_TEST_SETS=reference: a test's Parquet sample-set upload is registered by reference instead,
 * unchanged otherwise (same name, line, label, time, keys, sharing): the file is split into two
 * Parquet files of a folder beside it (rows in the same order) and registered as `file://<folder>/`,
 * so the workflows read it as they read a set on a shared path. Uploads the registration cannot
 * express (CSV, allowNonFinite) stay uploads.
 */
export const setsByReference = process.env.ABACUS_TEST_SETS === 'reference';

async function splitParquet(file: string): Promise<string> {
  const dir = `${file}.by-reference-${randomBytes(4).toString('hex')}`;
  fs.mkdirSync(dir, { recursive: true });
  // loaded only when sets are registered by reference (most test files never need DuckDB here)
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  try {
    await con.run('SET preserve_insertion_order = true');
    const src = `read_parquet('${file.replace(/'/g, "''")}', file_row_number = true)`;
    const [[n]] = (await con.runAndReadAll(`SELECT count(*) FROM ${src}`)).getRows();
    const half = Math.floor(Number(n) / 2);
    for (const [k, where] of [`file_row_number < ${half}`, `file_row_number >= ${half}`].entries())
      await con.run(
        `COPY (SELECT * EXCLUDE (file_row_number) FROM ${src} WHERE ${where} ORDER BY file_row_number) TO '${path.join(dir, `part-${k}.parquet`).replace(/'/g, "''")}' (FORMAT parquet)`,
      );
  } finally {
    con.closeSync();
    db.closeSync();
  }
  return dir;
}

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
    if (setsByReference && route === '/sample-sets' && /\.parquet$/i.test(file) && fields.allowNonFinite === undefined) {
      const list = (v: string | undefined) =>
        (v ?? '')
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean);
      const { keys, shareWith, ...rest } = fields;
      const r = await call('POST', '/sample-sets/register', {
        ...rest,
        url: `file://${await splitParquet(file)}/`,
        ...(keys !== undefined ? { keys: list(keys) } : {}),
        ...(shareWith !== undefined ? { shareWith: list(shareWith) } : {}),
      });
      if (r.status === 201 && !String(r.body.location ?? '').startsWith('file:///'))
        throw new Error(`registered ${fields.name} but the set has no file:// location: ${JSON.stringify(r.body).slice(0, 300)}`);
      return r;
    }
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
