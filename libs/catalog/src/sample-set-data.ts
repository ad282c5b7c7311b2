import fs from 'node:fs';
import path from 'node:path';
import type { ReferencedObjectRecord, SampleSetEntity } from '@abacus/data';
import { StoreError, type ObjectCache, type ObjectInfo, type StoreRegistry } from '@abacus/store';
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
      // an upload another host took: from the deployment's store, through this host's cache, under
      // its own name (readers go by the extension)
      const key = this.dataDir.storeKey(ss.files[0]);
      const info = await shared.store.head(key);
      if (!info) throw new StoreError(shared.url, `${key} of sample set ${ss.name} is not in the store`, 'not-found');
      const name = path.basename(ss.files[0]);
      const got = await this.dataDir.linkCached(shared.store, shared.cache, `samples-${ss.id.slice(0, 8)}`, [
        { path: name, size: info.size, info },
      ]);
      onProgress?.(1, got.fetchedBytes > 0 ? `fetched ${ss.name} from ${shared.url}` : `${ss.name}: in this host's cache`);
      return {
        path: path.join(this.dataDir.abs(got.dir), name),
        fetchedBytes: got.fetchedBytes,
        objects: 1,
        release: got.release,
      };
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
    // each object as pinned at registration: a changed or removed one is an error, not a silent new version
    const pinned = (o: ReferencedObjectRecord) => async (): Promise<ObjectInfo> => {
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
      return now;
    };
    const n = ss.objects.length;
    const got = await this.dataDir.linkCached(
      store,
      this.cache,
      `samples-${ss.id.slice(0, 8)}`,
      ss.objects.map((o) => ({ path: o.key.slice(base.length), size: o.size, info: pinned(o) })),
      onProgress ? (f) => onProgress(f, `fetching ${n} object(s) of ${ss.name}`) : undefined,
    );
    onProgress?.(
      1,
      got.fetchedBytes > 0
        ? `fetched ${(got.fetchedBytes / 2 ** 20).toFixed(1)} MiB of ${ss.name} from ${location.url} (${n} object(s); the rest cached)`
        : `${ss.name}: all ${n} object(s) in this host's cache`,
    );
    return { path: this.dataDir.abs(got.dir), fetchedBytes: got.fetchedBytes, objects: n, release: got.release };
  }
}
