import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import type { ObjectInfo, ObjectStore } from './object-store';

/** What a cache lookup did: served from disk, or fetched (and how many bytes). */
export interface CacheHit {
  file: string;
  fetched: boolean;
  bytes: number;
}

const ENTRY = /^[0-9a-f]{40}$/;

/** Whether a process of this host with that pid is running (one of another user's counts). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A bounded local copy of store objects (ABACUS_CACHE_GB), least recently used first out, shared by
 * every worker process on the host. An entry is named by the hash of (store URL, key, ETag, size),
 * so a changed object is a new entry and never a stale read. Safe across processes without a lock:
 * a fetch writes a temporary file and renames it into place (two processes fetching one object both
 * end with the same whole file); a use touches the entry (its mtime is the LRU clock) and reads it
 * through its own hard link `<entry>.use-<pid>-<n>`, so an eviction by another process at any moment
 * cannot take the file from under a reader (the link keeps it until released). Eviction runs after
 * each fetch, oldest first, until the cache is within its bound; an entry in use is not evicted
 * (its bytes stay on disk while read anyway), so the bound holds once readers release.
 */
export class ObjectCache {
  private uses = 0;

  constructor(
    readonly dir: string,
    readonly maxBytes: number,
  ) {
    fs.mkdirSync(dir, { recursive: true });
  }

  entryName(store: ObjectStore, info: Pick<ObjectInfo, 'key' | 'etag' | 'size'>): string {
    return createHash('sha1').update(`${store.url}\u0000${info.key}\u0000${info.etag}\u0000${info.size}`).digest('hex');
  }

  /**
   * A local file with the content of `info` (as a listing gave it), fetched when the cache lacks it;
   * the file stays readable until `release()`.
   */
  async acquire(store: ObjectStore, info: ObjectInfo): Promise<CacheHit & { release: () => void }> {
    const name = this.entryName(store, info);
    const entry = path.join(this.dir, name);
    const use = `${entry}.use-${process.pid}-${++this.uses}${randomBytes(3).toString('hex')}`;
    const release = () => fs.rmSync(use, { force: true });
    let fetched = false;
    for (let attempt = 0; ; attempt++) {
      try {
        await fsp.link(entry, use);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw err;
      }
      await store.download(info.key, entry);
      fetched = true;
    }
    try {
      const s = await fsp.stat(use);
      if (s.size !== info.size) {
        await fsp.rm(entry, { force: true });
        throw new Error(`${store.url}${info.key}: ${s.size} bytes, the listing said ${info.size} (changed while read?)`);
      }
      const now = new Date();
      await fsp.utimes(entry, now, now).catch(() => undefined);
      if (fetched) await this.evict(new Set([name]));
      return { file: use, fetched, bytes: fetched ? info.size : 0, release };
    } catch (err) {
      release();
      throw err;
    }
  }

  /**
   * Takes `file` in as the entry of `info` (what the store holds now, e.g. just uploaded from it):
   * moved, not copied, where the cache is on the same file system. `file` is gone afterwards.
   */
  async adopt(store: ObjectStore, info: ObjectInfo, file: string): Promise<void> {
    const name = this.entryName(store, info);
    const entry = path.join(this.dir, name);
    try {
      await fsp.link(file, entry);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EXDEV') {
        const tmp = `${entry}.part-${process.pid}-${randomBytes(4).toString('hex')}`;
        await fsp.copyFile(file, tmp);
        await fsp.rename(tmp, entry);
      } else if (code !== 'EEXIST') throw err;
    }
    await fsp.rm(file, { force: true });
    const now = new Date();
    await fsp.utimes(entry, now, now).catch(() => undefined);
    await this.evict(new Set([name]));
  }

  /** Bytes the cache holds now (entries only). */
  async usedBytes(): Promise<number> {
    return (await this.entries()).reduce((a, e) => a + e.size, 0);
  }

  private async entries(): Promise<{ name: string; size: number; mtime: number; inUse: boolean }[]> {
    const names = await fsp.readdir(this.dir);
    const inUse = new Set<string>();
    for (const n of names) {
      const m = /^([0-9a-f]{40})\.(use|part)-(\d+)-[0-9a-f]+$/.exec(n);
      if (!m) continue;
      if (!processAlive(Number(m[3])))
        await fsp.rm(path.join(this.dir, n), { force: true }); // left by a process that is gone
      else if (m[2] === 'use') inUse.add(m[1]);
    }
    const out: { name: string; size: number; mtime: number; inUse: boolean }[] = [];
    for (const n of names) {
      if (!ENTRY.test(n)) continue;
      const s = await fsp.stat(path.join(this.dir, n)).catch(() => null);
      if (s) out.push({ name: n, size: s.size, mtime: s.mtimeMs, inUse: inUse.has(n) });
    }
    return out;
  }

  /** Removes least recently used entries (never one of `keep`) until the cache is within its bound. */
  async evict(keep: Set<string> = new Set()): Promise<number> {
    const entries = await this.entries();
    let used = entries.reduce((a, e) => a + e.size, 0);
    let removed = 0;
    for (const e of entries.sort((a, b) => a.mtime - b.mtime)) {
      if (used <= this.maxBytes) break;
      if (keep.has(e.name) || e.inUse) continue; // a reader's link holds its bytes until released
      await fsp.rm(path.join(this.dir, e.name), { force: true });
      used -= e.size;
      removed += e.size;
    }
    return removed;
  }
}
