import type { Readable } from 'node:stream';

/** One object as a listing shows it. `etag` changes whenever the content does (S3's ETag; size + mtime on a file store). */
export interface ObjectInfo {
  /** key relative to the store's container (the bucket, or the file store's root directory) */
  key: string;
  size: number;
  etag: string;
  /** last modification, ms since the epoch */
  modified: number;
}

/**
 * The operations Abacus needs from a place that holds objects other hosts can read: an S3-compatible
 * bucket or a shared directory. Keys use `/`. Writes are atomic (a reader sees the old object or the
 * whole new one) and stream (no whole-object buffering).
 */
export interface ObjectStore {
  /** the container's URL (s3://bucket/ or file:///root/) */
  readonly url: string;
  /** fails with a StoreError when the container cannot be reached or does not exist */
  check(): Promise<void>;
  /** every object under `prefix` (recursively), in key order */
  list(prefix: string): Promise<ObjectInfo[]>;
  /** null when there is no such object */
  head(key: string): Promise<ObjectInfo | null>;
  /** bytes [start, end) of an object (explicit ranges only: some S3 servers refuse suffix ranges) */
  read(key: string, start: number, end: number): Promise<Uint8Array>;
  /** the whole object streamed into `file` (written under a temporary name, then renamed) */
  download(key: string, file: string): Promise<void>;
  /** `body` streamed to `key`; returns what the store then lists for it */
  upload(key: string, body: Readable | Uint8Array, contentType?: string): Promise<ObjectInfo>;
  /** removes the objects (missing ones are no error) */
  remove(keys: string[]): Promise<void>;
}
