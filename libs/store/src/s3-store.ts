import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { ObjectInfo, ObjectStore } from './object-store';
import { StoreError, type StoreErrorCode } from './store-error';

/** How to reach one S3-compatible service. Credentials absent: the SDK's chain (AWS_* variables, profile, instance role). */
export interface S3Settings {
  endpoint?: string;
  region?: string;
  forcePathStyle?: boolean;
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
}

// The SDK warns on Node 20 about its releases after January 2027; the version here is pinned by the
// lock file, so the notice is for whoever upgrades it, not for every process that reads a bucket.
// eslint-disable-next-line no-restricted-syntax -- a setting of the SDK, read by the SDK itself
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** A store error for an SDK or network failure, without anything of the request's signature or credentials. */
export function s3Failure(location: string, err: unknown, what: string): StoreError {
  const e = err as {
    name?: string;
    code?: string;
    message?: string;
    $metadata?: { httpStatusCode?: number };
    cause?: { code?: string };
  };
  const net = e.code ?? e.cause?.code;
  const status = e.$metadata?.httpStatusCode;
  let code: StoreErrorCode = 'failed';
  let reason: string;
  if (
    (net && /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH)$/.test(net)) ||
    e.name === 'TimeoutError'
  ) {
    code = 'unreachable';
    reason = `the endpoint cannot be reached (${net ?? e.name})`;
  } else if (e.name === 'CredentialsProviderError') {
    code = 'denied';
    reason =
      'no credentials for this store: set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or a profile or role), or give the bucket an entry in ABACUS_STORES_FILE';
  } else if (e.name === 'NoSuchBucket' || (status === 404 && what === 'check')) {
    code = 'no-bucket';
    reason = 'no such bucket';
  } else if (e.name === 'NoSuchKey' || e.name === 'NotFound' || status === 404) {
    code = 'not-found';
    reason = 'no such object';
  } else if (
    e.name === 'AccessDenied' ||
    e.name === 'InvalidAccessKeyId' ||
    e.name === 'SignatureDoesNotMatch' ||
    status === 403
  ) {
    code = 'denied';
    reason = `access denied (${e.name ?? status}): check the store's credentials`;
  } else {
    reason = `${what} failed: ${e.name ?? 'error'}${status ? ` (HTTP ${status})` : ''}${e.message && e.message !== e.name ? `: ${e.message.split('\n')[0]}` : ''}`;
  }
  return new StoreError(location, reason, code);
}

/** An S3-compatible bucket (AWS S3, MinIO, Ceph RGW, R2) through the AWS SDK v3. */
export class S3Store implements ObjectStore {
  readonly url: string;
  private readonly client: S3Client;

  constructor(
    readonly bucket: string,
    settings: S3Settings = {},
  ) {
    this.url = `s3://${bucket}/`;
    const config: S3ClientConfig = {
      region: settings.region ?? 'us-east-1',
      forcePathStyle: settings.forcePathStyle ?? settings.endpoint !== undefined,
      // a refused connection is reported after a few quick tries, not after the SDK's long default backoff;
      // an endpoint that never answers fails its connection after 10 s (a blackholed address)
      maxAttempts: 3,
      requestHandler: { connectionTimeout: 10_000, socketTimeout: 120_000 },
    };
    if (settings.endpoint) config.endpoint = settings.endpoint;
    if (settings.accessKeyId && settings.secretAccessKey) {
      config.credentials = {
        accessKeyId: settings.accessKeyId,
        secretAccessKey: settings.secretAccessKey,
        ...(settings.sessionToken ? { sessionToken: settings.sessionToken } : {}),
      };
    }
    this.client = new S3Client(config);
  }

  private where(key = ''): string {
    return `s3://${this.bucket}/${key}`;
  }

  async check(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      throw s3Failure(this.where(), err, 'check');
    }
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    const out: ObjectInfo[] = [];
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
        );
      } catch (err) {
        throw s3Failure(this.where(prefix), err, 'list');
      }
      for (const o of page.Contents ?? []) {
        if (!o.Key || o.Key.endsWith('/')) continue;
        out.push({
          key: o.Key,
          size: Number(o.Size ?? 0),
          etag: (o.ETag ?? '').replace(/"/g, ''),
          modified: o.LastModified?.getTime() ?? 0,
        });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async head(key: string): Promise<ObjectInfo | null> {
    try {
      const h = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return {
        key,
        size: Number(h.ContentLength ?? 0),
        etag: (h.ETag ?? '').replace(/"/g, ''),
        modified: h.LastModified?.getTime() ?? 0,
      };
    } catch (err) {
      const f = s3Failure(this.where(key), err, 'head');
      if (f.code === 'not-found') return null;
      throw f;
    }
  }

  async read(key: string, start: number, end: number): Promise<Uint8Array> {
    if (end <= start) return new Uint8Array(0);
    try {
      const r = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: `bytes=${start}-${end - 1}` }),
      );
      const bytes = await r.Body!.transformToByteArray();
      if (bytes.length !== end - start) {
        throw new StoreError(this.where(key), `asked for bytes ${start}-${end - 1}, got ${bytes.length} bytes`, 'invalid');
      }
      return bytes;
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw s3Failure(this.where(key), err, 'read');
    }
  }

  async download(key: string, file: string): Promise<void> {
    const tmp = `${file}.part-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      await pipeline(r.Body as Readable, fs.createWriteStream(tmp));
      await fsp.rename(tmp, file);
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      throw err instanceof StoreError ? err : s3Failure(this.where(key), err, 'download');
    }
  }

  async upload(key: string, body: Readable | Uint8Array, contentType?: string): Promise<ObjectInfo> {
    try {
      // multipart for large bodies (8 MiB parts, 4 in flight): memory stays bounded whatever the size
      const up = new Upload({
        client: this.client,
        params: {
          Bucket: this.bucket,
          Key: key,
          Body: body instanceof Uint8Array ? Buffer.from(body) : body,
          ContentType: contentType,
        },
        partSize: 8 * 1024 * 1024,
        queueSize: 4,
      });
      await up.done();
    } catch (err) {
      throw s3Failure(this.where(key), err, 'upload');
    }
    const info = await this.head(key);
    if (!info) throw new StoreError(this.where(key), 'the object is not there after the upload', 'failed');
    return info;
  }

  async remove(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      try {
        await this.client.send(
          new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }),
        );
      } catch (err) {
        throw s3Failure(this.where(batch[0]), err, 'remove');
      }
    }
  }

  destroy(): void {
    this.client.destroy();
  }
}
