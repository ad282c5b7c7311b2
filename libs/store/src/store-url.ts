import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { StoreError } from './store-error';

/** Where objects live: an S3-compatible bucket (and a key prefix in it) or a directory every host mounts. */
export type StoreLocation =
  { scheme: 's3'; bucket: string; prefix: string; url: string } | { scheme: 'file'; root: string; url: string };

/** S3's bucket naming rule (3-63 characters: lower-case letters, digits, dots and hyphens). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * Parses `s3://bucket/prefix/` or `file:///absolute/path/` (a bare absolute path counts as file://).
 * The prefix keeps its trailing slash when given; a file location is a directory.
 */
export function parseStoreUrl(raw: string): StoreLocation {
  const url = raw.trim();
  if (url.startsWith('s3://')) {
    const rest = url.slice('s3://'.length);
    const slash = rest.indexOf('/');
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    const prefix = slash < 0 ? '' : rest.slice(slash + 1);
    if (!BUCKET.test(bucket)) {
      throw new StoreError(
        url,
        `"${bucket}" is not a valid bucket name (3-63 lower-case letters, digits, dots or hyphens)`,
        'invalid',
      );
    }
    if (prefix.includes('//') || prefix.split('/').some((p) => p === '..' || p === '.')) {
      throw new StoreError(url, 'the key prefix has an empty, "." or ".." segment', 'invalid');
    }
    return { scheme: 's3', bucket, prefix, url: `s3://${bucket}/${prefix}` };
  }
  let root: string;
  if (url.startsWith('file://')) {
    try {
      root = fileURLToPath(url);
    } catch (err) {
      throw new StoreError(url, `not a file URL with an absolute path (${(err as Error).message})`, 'invalid');
    }
  } else if (path.isAbsolute(url)) root = url;
  else throw new StoreError(url, 'expected s3://bucket/prefix/ or file:///absolute/path/', 'invalid');
  if (url.split(/[\\/]/).includes('..')) throw new StoreError(url, 'the path has a ".." segment', 'invalid');
  root = path.resolve(root);
  return { scheme: 'file', root, url: `file://${root}${root.endsWith('/') ? '' : '/'}` };
}

/** `base` + `key` as one URL, for messages and records. */
export function objectUrl(base: StoreLocation, key: string): string {
  return base.scheme === 's3' ? `s3://${base.bucket}/${key}` : `file://${path.join(base.root, key)}`;
}
