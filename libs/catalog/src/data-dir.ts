import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { processAlive, StoreError, type ObjectCache, type ObjectInfo, type ObjectStore } from '@abacus/store';

/** A stored or computed relative path that would lead out of the data directory. */
export class PathEscapeError extends Error {
  constructor(
    readonly relative: string,
    reason: string,
  ) {
    super(`path "${relative}" ${reason}`);
    this.name = 'PathEscapeError';
  }
}

const within = (root: string, p: string) => p === root || p.startsWith(root + path.sep);

/** this host's name as it may appear in a folder name */
const scratchHost = () => os.hostname().replace(/[^A-Za-z0-9_.]/g, '_');

/**
 * The deployment's store (ABACUS_STORE_URL): where every host finds what another wrote (uploads,
 * built samples, checkpoints, shared embeddings). `cache` is the host's bounded cache of large objects.
 */
export interface SharedStore {
  store: ObjectStore;
  /** key prefix in the store ('' or ending in '/') */
  prefix: string;
  /** the store container's URL (s3://bucket/ or file:///root/); messages name `url` + key */
  url: string;
  cache: ObjectCache | null;
  /**
   * The most bytes of local copies of store entries (checkpoints, embeddings, uploads: pulled here
   * or pushed from here) the data directory keeps; past it the least recently used go, those unused
   * for at least `localCopiesGraceMs` (read again from the store when needed). Unset: no bound.
   */
  localCopiesBytes?: number;
  /** how long a local copy is kept after its last use whatever the bound (default an hour: a build reads its upload for minutes) */
  localCopiesGraceMs?: number;
}

/** Where the data directory notes its local copies of store entries: one file each, its mtime the last use. */
const COPIES = '.local-copies';

/** A directory's manifest in the store, written after its files: a directory is there once this is. */
const MANIFEST = '.abacus-dir.json';
/** Left in a local directory this process stored: its files are the ones the store's manifest lists. */
const STORED = '.abacus-stored';

interface Manifest {
  files: { path: string; size: number; etag: string }[];
}

/** A directory of the store presented on this host through the cache (links), until `release()`. */
export interface PulledDir {
  /** relative to the data directory */
  dir: string;
  fetchedBytes: number;
  release(): void;
}

async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(n, queue.length) }, async () => {
      for (let x = queue.shift(); x !== undefined; x = queue.shift()) await fn(x);
    }),
  );
}

async function walkFiles(dir: string, base = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fsp.readdir(dir, { withFileTypes: true })) {
    const rel = base ? `${base}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await walkFiles(path.join(dir, e.name), rel)));
    else if (e.isFile()) out.push(rel);
  }
  return out.sort();
}

/**
 * The layout of the data directory; the only place that turns ids and stored relative paths into
 * paths. Every path it hands out stays inside the directory: no absolute paths, no `..` segments, and
 * no symbolic link on the way that resolves outside it (checked with realpath on each call).
 *
 * With a shared store (ABACUS_STORE_URL) the data directory is this host's working copy: what a
 * process writes that other hosts need is pushed to the store under the same relative path (`push`),
 * and what it reads is pulled from the store when this host lacks it (`pull`, or `pullCached` for
 * large directories, which go through the host's bounded cache). Without one, both are no-ops: the
 * data directory is the store (shared by mounting it on every host, or one host).
 */
export class DataDir {
  readonly root: string;

  constructor(
    root: string,
    readonly shared: SharedStore | null = null,
  ) {
    this.root = path.resolve(root);
  }

  /** the store key of a relative path */
  storeKey(relative: string): string {
    this.abs(relative);
    return `${this.shared?.prefix ?? ''}${relative.split(path.sep).join('/')}`;
  }

  private async manifest(relative: string): Promise<Manifest | null> {
    const s = this.shared!;
    const key = `${this.storeKey(relative)}/${MANIFEST}`;
    if (!(await s.store.head(key))) return null;
    return JSON.parse(Buffer.from(await this.readAll(key)).toString('utf8')) as Manifest;
  }

  private async readAll(key: string): Promise<Uint8Array> {
    const info = await this.shared!.store.head(key);
    if (!info) throw new StoreError(`${this.shared!.url}${key}`, 'no such object', 'not-found');
    return info.size === 0 ? new Uint8Array(0) : this.shared!.store.read(key, 0, info.size);
  }

  /** Whether `relative` (a file, or a directory pushed whole) is on this host or in the store. */
  async exists(relative: string): Promise<boolean> {
    if (fs.existsSync(this.abs(relative))) return true;
    if (!this.shared) return false;
    const key = this.storeKey(relative);
    return !!(await this.shared.store.head(key)) || !!(await this.shared.store.head(`${key}/${MANIFEST}`));
  }

  /**
   * The local path of `relative` (a file, or a directory pushed whole), fetched from the store into
   * the data directory when this host lacks it (a directory into a temporary one, renamed into place).
   * For small things (uploads, checkpoints, embeddings); large ones: pullCached.
   */
  async pull(relative: string): Promise<string> {
    const local = this.abs(relative);
    if (!this.shared) return local;
    if (fs.existsSync(local)) {
      this.touchCopy(relative);
      return local;
    }
    const s = this.shared;
    const key = this.storeKey(relative);
    fs.mkdirSync(path.dirname(local), { recursive: true });
    if (await s.store.head(key)) {
      await s.store.download(key, local);
      await this.noteCopy(relative);
      return local;
    }
    const m = await this.manifest(relative);
    if (!m) throw new StoreError(`${s.url}${key}`, 'not on this host and not in the store', 'not-found');
    const tmp = `${local}.pull-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      await pool(m.files, 4, async (f) => {
        const dst = path.join(tmp, f.path);
        fs.mkdirSync(path.dirname(dst), { recursive: true });
        await s.store.download(`${key}/${f.path}`, dst);
      });
      try {
        fs.renameSync(tmp, local);
      } catch (err) {
        // another process of this host pulled it first: theirs is the same
        if (!fs.existsSync(local)) throw err;
      }
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
    await this.noteCopy(relative);
    return local;
  }

  private copyMarker(relative: string): string {
    const id = createHash('sha256').update(relative.split(path.sep).join('/')).digest('hex').slice(0, 32);
    return path.join(this.root, COPIES, `${id}.json`);
  }

  /** A use of `relative` when it is a noted local copy: its marker's time moves to now. */
  private touchCopy(relative: string): void {
    const marker = this.copyMarker(relative);
    const now = new Date();
    try {
      fs.utimesSync(marker, now, now);
    } catch {
      // not a noted copy (written here and not stored, or no store)
    }
  }

  /** Notes `relative` (now on this host and in the store) as a local copy, then keeps copies within their bound. */
  private async noteCopy(relative: string): Promise<void> {
    if (!this.shared?.localCopiesBytes) return;
    const local = this.abs(relative);
    const st = fs.statSync(local, { throwIfNoEntry: false });
    if (!st) return;
    let bytes = st.isDirectory() ? 0 : st.size;
    if (st.isDirectory()) for (const f of await walkFiles(local)) bytes += fs.statSync(path.join(local, f)).size;
    fs.mkdirSync(path.join(this.root, COPIES), { recursive: true });
    fs.writeFileSync(this.copyMarker(relative), JSON.stringify({ relative, bytes }));
    await this.trimLocalCopies();
  }

  /**
   * Keeps the local copies of store entries within `localCopiesBytes`: the least recently used go
   * first (renamed aside, then removed: a reader that has a file open keeps reading it), never one
   * used within the grace period. Returns the relative paths removed. Safe with several processes
   * on one data directory (each rechecks a copy's last use just before removing it).
   */
  async trimLocalCopies(): Promise<string[]> {
    const budget = this.shared?.localCopiesBytes;
    if (!budget) return [];
    const grace = this.shared?.localCopiesGraceMs ?? 60 * 60_000;
    const dir = path.join(this.root, COPIES);
    const copies: { marker: string; relative: string; bytes: number; used: number }[] = [];
    for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
      const marker = path.join(dir, name);
      try {
        const used = fs.statSync(marker).mtimeMs;
        const { relative, bytes } = JSON.parse(fs.readFileSync(marker, 'utf8')) as { relative: string; bytes: number };
        if (!fs.existsSync(this.abs(relative))) {
          fs.rmSync(marker, { force: true }); // removed by its owner since
          continue;
        }
        copies.push({ marker, relative, bytes, used });
      } catch {
        // a marker being written or removed by another process: its next trim sees it
      }
    }
    let total = copies.reduce((a, c) => a + c.bytes, 0);
    const removed: string[] = [];
    copies.sort((a, b) => a.used - b.used);
    for (const c of copies) {
      if (total <= budget) break;
      const used = fs.statSync(c.marker, { throwIfNoEntry: false })?.mtimeMs;
      if (used === undefined || used !== c.used || Date.now() - used < grace) continue;
      const local = this.abs(c.relative);
      const aside = `${local}.evict-${process.pid}-${randomBytes(4).toString('hex')}`;
      try {
        fs.renameSync(local, aside);
      } catch {
        continue; // gone already (another process trimmed it)
      }
      fs.rmSync(c.marker, { force: true });
      fs.rmSync(aside, { recursive: true, force: true });
      total -= c.bytes;
      removed.push(c.relative);
    }
    return removed;
  }

  /**
   * Presents the store directory `relative` on this host through the bounded cache: each file is
   * fetched once per host (the cache is shared by its worker processes) and linked into a folder of
   * its own under tmp/. Null when the store has no such directory. The files stay until `release()`.
   */
  async pullCached(relative: string, onProgress?: (fraction: number, message: string) => void): Promise<PulledDir | null> {
    const s = this.shared;
    if (!s?.cache) return null;
    const m = await this.manifest(relative);
    if (!m) return null;
    const key = this.storeKey(relative);
    return this.linkCached(
      s.store,
      s.cache,
      path.basename(relative),
      m.files.map((f) => ({
        path: f.path,
        size: f.size,
        info: { key: `${key}/${f.path}`, size: f.size, etag: f.etag, modified: 0 },
      })),
      onProgress ? (f) => onProgress(f, `fetching ${relative} from the store`) : undefined,
    );
  }

  /**
   * Objects of `store` presented on this host through `cache`: each fetched once per host (the cache
   * is shared by its processes) and linked at its `path` into a fresh folder tmp/pulled-<pid>-<n>/<name>/.
   * `info` is what the store holds, or a check that returns it (and throws when the object is not
   * the one wanted). The links stay until `release()`.
   */
  async linkCached(
    store: ObjectStore,
    cache: ObjectCache,
    name: string,
    objects: { path: string; size: number; info: ObjectInfo | (() => Promise<ObjectInfo>) }[],
    onProgress?: (fraction: number) => void,
  ): Promise<PulledDir> {
    const holder = path.join('tmp', `pulled-${process.pid}-${randomBytes(4).toString('hex')}`);
    const dirRel = path.join(holder, name);
    const dir = this.ensure(dirRel);
    const releases: (() => void)[] = [];
    const release = () => {
      for (const r of releases.splice(0)) r();
      fs.rmSync(this.abs(holder), { recursive: true, force: true });
    };
    let fetchedBytes = 0;
    let done = 0;
    const total = objects.reduce((a, o) => a + o.size, 0);
    try {
      await pool(objects, 8, async (o) => {
        const hit = await cache.acquire(store, typeof o.info === 'function' ? await o.info() : o.info);
        releases.push(hit.release);
        fetchedBytes += hit.bytes;
        const link = path.join(dir, o.path);
        fs.mkdirSync(path.dirname(link), { recursive: true });
        fs.symlinkSync(hit.file, link);
        done += o.size;
        onProgress?.(total ? done / total : 1);
      });
    } catch (err) {
      release();
      throw err;
    }
    return { dir: dirRel, fetchedBytes, release };
  }

  /**
   * Publishes `relative` (a file, or a directory: its files, then its manifest) to the store, streamed.
   * With `adopt`, a directory's files move into the host's cache afterwards (they are what the store
   * now holds) and the local directory is removed: read it back with pullCached.
   * Returns false when there is no store, or the directory was in it already (first writer wins).
   */
  async push(relative: string, opts: { adopt?: boolean } = {}): Promise<boolean> {
    const s = this.shared;
    if (!s) return false;
    const local = this.abs(relative);
    const key = this.storeKey(relative);
    const st = fs.statSync(local);
    if (st.isFile()) {
      await s.store.upload(key, fs.createReadStream(local));
      await this.noteCopy(relative);
      return true;
    }
    if (await s.store.head(`${key}/${MANIFEST}`)) {
      // stored before: by this host (its files are the stored ones: into the cache) or by another
      if (opts.adopt) {
        if (fs.existsSync(path.join(local, STORED))) await this.adoptPushed(relative);
        else fs.rmSync(local, { recursive: true, force: true });
      }
      return false;
    }
    const files = (await walkFiles(local)).filter((f) => f !== STORED);
    const manifest: Manifest = { files: [] };
    await pool(files, 4, async (f) => {
      const info = await s.store.upload(`${key}/${f}`, fs.createReadStream(path.join(local, f)));
      manifest.files.push({ path: f, size: info.size, etag: info.etag });
    });
    manifest.files.sort((a, b) => (a.path < b.path ? -1 : 1));
    await s.store.upload(`${key}/${MANIFEST}`, Buffer.from(JSON.stringify(manifest)), 'application/json');
    fs.writeFileSync(path.join(local, STORED), '');
    if (opts.adopt && s.cache) {
      for (const f of manifest.files)
        await s.cache.adopt(
          s.store,
          { key: `${key}/${f.path}`, size: f.size, etag: f.etag, modified: 0 },
          path.join(local, f.path),
        );
      fs.rmSync(local, { recursive: true, force: true });
    } else {
      await this.noteCopy(relative);
    }
    return true;
  }

  /**
   * After `push` stored the local directory `relative`: its files move into the host's cache under
   * what the store's manifest lists (read them back with pullCached) and the local directory goes.
   */
  async adoptPushed(relative: string): Promise<void> {
    const s = this.shared;
    if (!s?.cache) return;
    const m = await this.manifest(relative);
    const local = this.abs(relative);
    if (m) {
      const key = this.storeKey(relative);
      for (const f of m.files) {
        const file = path.join(local, f.path);
        if (fs.existsSync(file))
          await s.cache.adopt(s.store, { key: `${key}/${f.path}`, size: f.size, etag: f.etag, modified: 0 }, file);
      }
    }
    fs.rmSync(local, { recursive: true, force: true });
  }

  /** Removes `relative` here and from the store (a file, or a directory with its manifest). */
  async removeShared(relative: string): Promise<void> {
    this.remove(relative);
    const s = this.shared;
    if (!s) return;
    const key = this.storeKey(relative);
    const under = await s.store.list(`${key}/`);
    // the manifest first: a half-removed directory is no longer there for readers
    await s.store.remove([`${key}/${MANIFEST}`]);
    const self = (await s.store.head(key)) ? [key] : [];
    await s.store.remove([...self, ...under.map((o) => o.key).filter((k) => !k.endsWith(MANIFEST))]);
  }

  abs(relative: string): string {
    if (typeof relative !== 'string' || relative === '' || relative.includes('\0')) {
      throw new PathEscapeError(String(relative), 'is not a relative path');
    }
    if (path.isAbsolute(relative))
      throw new PathEscapeError(relative, 'is absolute; stored paths are relative to the data directory');
    if (relative.split(/[\\/]/).includes('..')) throw new PathEscapeError(relative, 'contains ".."');
    const p = path.resolve(this.root, relative);
    if (!within(this.root, p)) throw new PathEscapeError(relative, 'escapes the data directory');
    // the deepest part that exists decides where the path really leads (symbolic links resolved)
    const present = (q: string) => fs.lstatSync(q, { throwIfNoEntry: false }) !== undefined;
    if (!present(this.root)) return p;
    let existing = p;
    while (!present(existing)) existing = path.dirname(existing);
    const realRoot = fs.realpathSync(this.root);
    let real: string;
    try {
      real = fs.realpathSync(existing);
    } catch {
      throw new PathEscapeError(relative, 'passes a symbolic link that leads nowhere');
    }
    if (!within(realRoot, real)) throw new PathEscapeError(relative, 'leads out of the data directory through a symbolic link');
    return p;
  }

  sampleSetDir(id: string): string {
    return path.join('sample-sets', id);
  }

  featureTableDir(id: string): string {
    return path.join('feature-tables', id);
  }

  tmpDir(): string {
    const dir = this.abs('tmp');
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  /**
   * A fresh scratch folder of this process, tmp/scratch-<host>-<pid>-<n>-<label>/ (absolute path):
   * for files a job writes and reads only while it runs (copies of chosen rows as shards). The job
   * removes it when done (`remove`); a process killed meanwhile leaves it to `sweepScratch`.
   */
  scratch(label: string): { dir: string; remove: () => void } {
    const name = `scratch-${scratchHost()}-${process.pid}-${randomBytes(4).toString('hex')}-${label.replace(/[^A-Za-z0-9_.-]/g, '_')}`;
    const dir = this.ensure(path.join('tmp', name));
    return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
  }

  /**
   * Removes the scratch folders left by processes of this host that are no longer running (killed
   * mid-job); those of running processes, and of other hosts sharing the folder, stay. The names removed.
   */
  sweepScratch(): string[] {
    const root = this.abs('tmp');
    if (!fs.existsSync(root)) return [];
    const prefix = `scratch-${scratchHost()}-`;
    const removed: string[] = [];
    for (const e of fs.readdirSync(root)) {
      if (!e.startsWith(prefix)) continue;
      const pid = Number(e.slice(prefix.length).split('-')[0]);
      if (!Number.isInteger(pid) || pid <= 0 || processAlive(pid)) continue;
      fs.rmSync(path.join(root, e), { recursive: true, force: true });
      removed.push(e);
    }
    return removed;
  }

  ensure(relative: string): string {
    const dir = this.abs(relative);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  remove(relative: string): void {
    fs.rmSync(this.abs(relative), { recursive: true, force: true });
  }
}
