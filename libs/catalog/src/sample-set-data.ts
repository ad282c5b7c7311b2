import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { SampleSetEntity } from '@abacus/data';
import { StoreError, type ObjectCache, type StoreRegistry } from '@abacus/store';
import type { DataDir } from './data-dir';

/** A sample set's data opened for reading on this host. */
export interface OpenedSamples {
  /** the Parquet / CSV file of an upload, or a folder mirroring the referenced objects (partition folders kept) */
  path: string;
  /** bytes fetched from the store for this use (0 when the cache held everything) */
  fetchedBytes: number;
  objects: number;
  /** ends the use: the cache may evict the objects again */
  release(): void;
}

/**
 * Where a worker reads a sample set: an upload is its file under the data directory; a set
 * registered by reference is fetched into the host's bounded cache (ranged and whole-object reads
 * through the store, never re-fetched while cached) and presented as a folder of links in the same
 * layout as in the store, so partition folders (dt=.../) stay columns. An object whose ETag no longer
 * matches the registration is an error: the set's version pins its objects.
 */
export class SampleSetData {
  constructor(
    private readonly dataDir: DataDir,
    private readonly stores: StoreRegistry | null,
    private readonly cache: ObjectCache | null,
  ) {}

  async open(ss: SampleSetEntity, onProgress?: (fraction: number, message: string) => void): Promise<OpenedSamples> {
    if (!ss.location || !ss.objects) {
      const shared = this.dataDir.shared;
      const local = this.dataDir.abs(ss.files[0]);
      if (!shared?.cache || fs.existsSync(local)) return { path: local, fetchedBytes: 0, objects: 1, release: () => undefined };
      // an upload another host took: from the deployment's store, through this host's cache
      const info = await shared.store.head(this.dataDir.storeKey(ss.files[0]));
      if (!info)
        throw new StoreError(
          shared.url,
          `${this.dataDir.storeKey(ss.files[0])} of sample set ${ss.name} is not in the store`,
          'not-found',
        );
      const hit = await shared.cache.acquire(shared.store, info);
      // under its own name (readers go by the extension)
      const dir = this.dataDir.ensure(
        path.join('tmp', `samples-${ss.id.slice(0, 8)}-${process.pid}-${randomBytes(4).toString('hex')}`),
      );
      const file = path.join(dir, path.basename(ss.files[0]));
      fs.symlinkSync(hit.file, file);
      onProgress?.(1, hit.fetched ? `fetched ${ss.name} from ${shared.url}` : `${ss.name}: in this host's cache`);
      const release = () => {
        hit.release();
        fs.rmSync(dir, { recursive: true, force: true });
      };
      return { path: file, fetchedBytes: hit.bytes, objects: 1, release };
    }
    if (!this.stores || !this.cache)
      throw new Error(`sample set ${ss.name} is registered by reference, and this process has no store settings`);
    const { store, prefix, location } = this.stores.resolve(ss.location);
    const base =
      prefix === '' || prefix.endsWith('/')
        ? prefix
        : ss.objects.length === 1 && ss.objects[0].key === prefix
          ? prefix.slice(0, prefix.lastIndexOf('/') + 1)
          : `${prefix}/`;
    const dir = this.dataDir.ensure(
      path.join('tmp', `samples-${ss.id.slice(0, 8)}-${process.pid}-${randomBytes(4).toString('hex')}`),
    );
    const releases: (() => void)[] = [];
    const release = () => {
      for (const r of releases.splice(0)) r();
      fs.rmSync(dir, { recursive: true, force: true });
    };
    let fetchedBytes = 0;
    let done = 0;
    const total = ss.objects.reduce((a, o) => a + o.size, 0);
    try {
      const queue = [...ss.objects];
      await Promise.all(
        Array.from({ length: Math.min(8, queue.length) }, async () => {
          for (let o = queue.shift(); o; o = queue.shift()) {
            const now = await store.head(o.key);
            if (!now)
              throw new StoreError(
                `${location.url}`,
                `object ${o.key} of sample set ${ss.name} is gone from the store: register the set again`,
                'not-found',
              );
            if (now.etag !== o.etag || now.size !== o.size) {
              throw new StoreError(
                `${location.url}`,
                `object ${o.key} of sample set ${ss.name} changed since it was registered (ETag ${o.etag}, ${o.size} bytes; now ${now.etag}, ${now.size} bytes): register it again for a new data version`,
              );
            }
            const hit = await this.cache!.acquire(store, now);
            releases.push(hit.release);
            fetchedBytes += hit.bytes;
            const link = path.join(dir, o.key.slice(base.length));
            fs.mkdirSync(path.dirname(link), { recursive: true });
            fs.symlinkSync(hit.file, link);
            done += o.size;
            onProgress?.(total > 0 ? done / total : 1, `fetching ${ss.objects!.length} object(s) of ${ss.name}`);
          }
        }),
      );
    } catch (err) {
      release();
      throw err;
    }
    onProgress?.(
      1,
      fetchedBytes > 0
        ? `fetched ${(fetchedBytes / 2 ** 20).toFixed(1)} MiB of ${ss.name} from ${location.url} (${ss.objects.length} object(s); the rest cached)`
        : `${ss.name}: all ${ss.objects.length} object(s) in this host's cache`,
    );
    return { path: dir, fetchedBytes, objects: ss.objects.length, release };
  }
}
