import fs from 'node:fs';
import path from 'node:path';
import { CliError } from './commands/command.types';

interface Issue {
  path: string;
  message: string;
}

/** The connection was closed under the request (a stale keep-alive socket), as Node's fetch reports it. */
export function droppedSocket(err: unknown): boolean {
  const cause = (err as { cause?: { code?: string; message?: string } } | null)?.cause;
  return (
    !!cause && (cause.code === 'UND_ERR_SOCKET' || cause.code === 'ECONNRESET' || /other side closed/.test(cause.message ?? ''))
  );
}

/**
 * How long to wait before sending a request the API's rate limit refused (HTTP 429) again: its
 * Retry-After (seconds or an HTTP date) when given, else 1, 2, 4 ... s; capped at 60 s.
 */
export function retryAfterMs(header: string | null, attempt: number, now = Date.now()): number {
  const cap = 60_000;
  if (header) {
    const s = Number(header);
    if (Number.isFinite(s) && s >= 0) return Math.min(cap, Math.max(250, s * 1000));
    const at = Date.parse(header);
    if (Number.isFinite(at)) return Math.min(cap, Math.max(250, at - now));
  }
  return Math.min(cap, 1000 * 2 ** attempt);
}

/** A thin fetch wrapper over the REST API that turns error bodies into readable CLI errors. */
export class ApiClient {
  /**
   * @param rateLimitRetries how many times a request the rate limit refused (429) is sent again after
   * the wait the API asks for (a 429 is answered before the request is carried out, so a write is safe
   * to repeat); 0 fails at once
   */
  constructor(
    readonly baseUrl: string,
    private readonly headers: Record<string, string> = {},
    private readonly rateLimitRetries = 8,
  ) {}

  async request<T>(method: string, route: string, body?: unknown): Promise<T> {
    let res: Response;
    const url = `${this.baseUrl.replace(/\/$/, '')}/api/v1${route}`;
    const send = () =>
      fetch(url, {
        method,
        headers: {
          ...this.headers,
          ...(body !== undefined && !(body instanceof FormData) ? { 'content-type': 'application/json' } : {}),
        },
        body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
      });
    for (let attempt = 0; ; attempt++) {
      try {
        res = await send().catch(async (err: unknown) => {
          // a GET that met a kept-alive socket the server had just closed is sent again, once, on a new
          // one (reads are safe to repeat; writes are not, and fail with the error below)
          if (method === 'GET' && droppedSocket(err)) return send();
          throw err;
        });
      } catch (err) {
        throw new CliError(
          `cannot reach the Abacus API at ${this.baseUrl} (${(err as Error).cause ?? (err as Error).message}); is it running? (set ABACUS_API_URL or --api)`,
        );
      }
      if (res.status !== 429 || attempt >= this.rateLimitRetries) break;
      const wait = retryAfterMs(res.headers.get('retry-after'), attempt);
      await res.arrayBuffer().catch(() => undefined);
      await new Promise((r) => setTimeout(r, wait));
    }
    const text = await res.text();
    let json: unknown = undefined;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = text;
    }
    if (!res.ok) throw new CliError(formatError(res.status, json));
    return json as T;
  }

  get<T>(route: string) {
    return this.request<T>('GET', route);
  }

  /** GET a binary body into `file` (written to a temporary name, then renamed: no half-written file on failure). */
  async download(route: string, file: string): Promise<number> {
    const url = `${this.baseUrl.replace(/\/$/, '')}/api/v1${route}`;
    let res: Response;
    try {
      res = await fetch(url, { headers: this.headers });
    } catch (err) {
      throw new CliError(`cannot reach the Abacus API at ${this.baseUrl} (${(err as Error).cause ?? (err as Error).message})`);
    }
    if (!res.ok) {
      const text = await res.text();
      let json: unknown = text;
      try {
        json = JSON.parse(text);
      } catch {
        /* plain text */
      }
      throw new CliError(formatError(res.status, json));
    }
    const bytes = Buffer.from(await res.arrayBuffer());
    const tmp = `${file}.part`;
    const { writeFileSync, renameSync } = await import('node:fs');
    writeFileSync(tmp, bytes);
    renameSync(tmp, file);
    return bytes.length;
  }

  post<T>(route: string, body?: unknown) {
    return this.request<T>('POST', route, body ?? {});
  }

  patch<T>(route: string, body: unknown) {
    return this.request<T>('PATCH', route, body);
  }

  async upload<T>(route: string, file: string, fields: Record<string, string | undefined>): Promise<T> {
    if (!fs.existsSync(file)) throw new CliError(`file not found: ${file}`);
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) form.append(k, v);
    form.append('file', await fs.openAsBlob(file), path.basename(file));
    return this.request<T>('POST', route, form);
  }
}

function formatError(status: number, body: unknown): string {
  const b = (body ?? {}) as { message?: unknown; issues?: Issue[] };
  if (Array.isArray(b.issues) && b.issues.length) {
    return `HTTP ${status}: ${String(b.message ?? 'request rejected')}\n${b.issues.map((i) => `  ${i.path}: ${i.message}`).join('\n')}`;
  }
  const message = `HTTP ${status}: ${typeof b.message === 'string' ? b.message : JSON.stringify(body)}`;
  // the API's 401 message already says how to get a key; a 429 deserves a hint at what to do
  return status === 429 ? `${message}\n  wait a minute and try again` : message;
}
