import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ObjectInfo, ObjectStore } from './object-store';
import { StoreError } from './store-error';

const tmpName = (file: string) => `${file}.part-${process.pid}-${randomBytes(4).toString('hex')}`;

/**
 * A directory every host mounts at the same path (NFS, CephFS, Lustre, JuiceFS, or a local disk for
 * one host). Keys are paths under the root; a key never leads out of it. Writes go to a temporary
 * name beside the target and are renamed into place.
 */
export class FileStore implements ObjectStore {
  readonly url: string;

  constructor(readonly root: string) {
    this.root = path.resolve(root);
    this.url = `file://${this.root}${this.root.endsWith('/') ? '' : '/'}`;
  }

  private abs(key: string): string {
    if (key === '') return this.root;
    if (path.isAbsolute(key) || key.includes('\0') || key.split('/').some((p) => p === '..' || p === '.' || p === '')) {
      throw new StoreError(`${this.url}${key}`, 'not a key inside the store', 'invalid');
    }
    return path.join(this.root, key);
  }

  async check(): Promise<void> {
    const s = await fsp.stat(this.root).catch(() => null);
    if (!s) throw new StoreError(this.url, 'no such directory (is the shared file system mounted on this host?)', 'no-bucket');
    if (!s.isDirectory()) throw new StoreError(this.url, 'not a directory', 'invalid');
  }

  private info(key: string, s: fs.Stats): ObjectInfo {
    return { key, size: s.size, etag: `${s.size.toString(16)}-${Math.round(s.mtimeMs).toString(16)}`, modified: s.mtimeMs };
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    await this.check();
    // the prefix is a key prefix, as on S3: "a/b" matches a/b.parquet and a/b/c.parquet
    const dirKey = prefix.endsWith('/') || prefix === '' ? prefix : prefix.slice(0, prefix.lastIndexOf('/') + 1);
    const start = dirKey === '' ? this.root : this.abs(dirKey.replace(/\/$/, ''));
    const out: ObjectInfo[] = [];
    const walk = async (dir: string, keyDir: string): Promise<void> => {
      const entries = await fsp.readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
        throw new StoreError(`${this.url}${keyDir}`, `cannot list: ${err.message}`, err.code === 'EACCES' ? 'denied' : 'failed');
      });
      for (const e of entries) {
        const key = `${keyDir}${e.name}`;
        if (e.isDirectory()) {
          if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) await walk(path.join(dir, e.name), `${key}/`);
        } else if (e.isFile() && key.startsWith(prefix) && !/\.part-\d+-[0-9a-f]{8}$/.test(e.name)) {
          const s = await fsp.stat(path.join(dir, e.name)).catch(() => null);
          if (s) out.push(this.info(key, s));
        }
      }
    };
    await walk(start, dirKey);
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async head(key: string): Promise<ObjectInfo | null> {
    const s = await fsp.stat(this.abs(key)).catch(() => null);
    return s && s.isFile() ? this.info(key, s) : null;
  }

  async read(key: string, start: number, end: number): Promise<Uint8Array> {
    const fh = await fsp.open(this.abs(key), 'r').catch((err: NodeJS.ErrnoException) => {
      throw new StoreError(
        `${this.url}${key}`,
        err.code === 'ENOENT' ? 'no such object' : err.message,
        err.code === 'ENOENT' ? 'not-found' : 'failed',
      );
    });
    try {
      const buf = Buffer.alloc(Math.max(0, end - start));
      let off = 0;
      while (off < buf.length) {
        const { bytesRead } = await fh.read(buf, off, buf.length - off, start + off);
        if (bytesRead === 0)
          throw new StoreError(`${this.url}${key}`, `bytes ${start}-${end - 1} are past the end of the object`, 'invalid');
        off += bytesRead;
      }
      return buf;
    } finally {
      await fh.close();
    }
  }

  async download(key: string, file: string): Promise<void> {
    const src = this.abs(key);
    const tmp = tmpName(file);
    try {
      await fsp.copyFile(src, tmp);
      await fsp.rename(tmp, file);
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      const e = err as NodeJS.ErrnoException;
      throw new StoreError(
        `${this.url}${key}`,
        e.code === 'ENOENT' ? 'no such object' : e.message,
        e.code === 'ENOENT' ? 'not-found' : 'failed',
      );
    }
  }

  async upload(key: string, body: Readable | Uint8Array): Promise<ObjectInfo> {
    const file = this.abs(key);
    await fsp.mkdir(path.dirname(file), { recursive: true });
    const tmp = tmpName(file);
    try {
      await pipeline(body instanceof Uint8Array ? Readable.from([body]) : body, fs.createWriteStream(tmp));
      await fsp.rename(tmp, file);
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      throw err instanceof StoreError ? err : new StoreError(`${this.url}${key}`, `cannot write: ${(err as Error).message}`);
    }
    return this.info(key, await fsp.stat(file));
  }

  async remove(keys: string[]): Promise<void> {
    for (const key of keys) await fsp.rm(this.abs(key), { force: true });
  }
}
