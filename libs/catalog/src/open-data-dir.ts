import path from 'node:path';
import { ObjectCache, StoreError, StoreRegistry, storeSettings, type StoreConfig } from '@abacus/store';
import { DataDir } from './data-dir';

export interface DataDirConfig extends StoreConfig {
  ABACUS_DATA_DIR: string;
  ABACUS_STORE_URL?: string;
  ABACUS_CACHE_DIR?: string;
  ABACUS_CACHE_GB: number;
}

/**
 * The data directory of a process, with the deployment's store when ABACUS_STORE_URL names one, and
 * the host's cache of store objects (shared by its processes; also the cache of sets registered by reference).
 */
export function openDataDir(
  config: DataDirConfig,
  stores = new StoreRegistry(storeSettings(config)),
): { dataDir: DataDir; cache: ObjectCache; stores: StoreRegistry } {
  const root = path.resolve(config.ABACUS_DATA_DIR);
  const cache = new ObjectCache(config.ABACUS_CACHE_DIR ?? path.join(root, 'cache'), config.ABACUS_CACHE_GB * 2 ** 30);
  if (!config.ABACUS_STORE_URL) return { dataDir: new DataDir(root), cache, stores };
  const { store, prefix, location } = stores.resolve(config.ABACUS_STORE_URL);
  if (location.scheme === 'file' && prefix !== '')
    throw new StoreError(`ABACUS_STORE_URL (${config.ABACUS_STORE_URL})`, 'names a file; the store is a directory', 'invalid');
  const p = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  // local copies of store entries (checkpoints, embeddings, uploads) take up to a quarter of the cache's bound besides it
  const localCopiesBytes = (config.ABACUS_CACHE_GB * 2 ** 30) / 4;
  return { dataDir: new DataDir(root, { store, prefix: p, url: store.url, cache, localCopiesBytes }), cache, stores };
}
