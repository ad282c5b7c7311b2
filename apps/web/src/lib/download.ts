/** Downloads that need the bearer key: a plain link cannot send it, so fetch, then save the blob. */
import { ApiError, errorMessage, issuesOf } from './api';

/** The file name of a Content-Disposition header (`filename="a.onnx"` or `filename*=UTF-8''a.onnx`), or null. */
export function dispositionName(header: string | null): string | null {
  if (!header) return null;
  const star = /filename\*\s*=\s*(?:UTF-8'')?([^;]+)/i.exec(header);
  if (star) {
    try {
      return decodeURIComponent(star[1].trim().replace(/^"|"$/g, ''));
    } catch {
      // fall through to the plain name
    }
  }
  const plain = /filename\s*=\s*"?([^";]+)"?/i.exec(header);
  return plain ? plain[1].trim() : null;
}

/** GETs /api/v1<path> with the key and hands the answer to the browser as a file download. */
export async function downloadWithKey(key: string, path: string, fallbackName: string): Promise<{ name: string; bytes: number }> {
  const res = await fetch(`/api/v1${path}`, { headers: { authorization: `Bearer ${key}` } });
  if (!res.ok) {
    let body: unknown = null;
    try {
      body = await res.json();
    } catch {
      body = null;
    }
    throw new ApiError(res.status, errorMessage(res.status, body), issuesOf(body));
  }
  const blob = await res.blob();
  const name = dispositionName(res.headers.get('content-disposition')) ?? fallbackName;
  saveBlob(blob, name);
  return { name, bytes: blob.size };
}

/** Hands a blob to the browser as a file download named `name`. */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  // the click has started the download; the object URL is no longer needed after this turn
  setTimeout(() => URL.revokeObjectURL(url), 0);
}
