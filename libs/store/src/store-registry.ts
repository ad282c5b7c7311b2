import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { FileStore } from './file-store';
import type { ObjectStore } from './object-store';
import { S3Store, type S3Settings } from './s3-store';
import { StoreError } from './store-error';
import { parseStoreUrl, type StoreLocation } from './store-url';

const s3SettingsSchema = z
  .object({
    endpoint: z.string().url().optional(),
    region: z.string().min(1).optional(),
    forcePathStyle: z.boolean().optional(),
    accessKeyId: z.string().min(1).optional(),
    secretAccessKey: z.string().min(1).optional(),
    sessionToken: z.string().min(1).optional(),
  })
  .strict();

/** ABACUS_STORES_FILE: settings per S3 URL prefix, e.g. {"s3://ads-logs/": {"endpoint": "...", "accessKeyId": "..."}}. */
export const storesFileSchema = z.record(z.string(), s3SettingsSchema).superRefine((v, ctx) => {
  for (const k of Object.keys(v)) {
    if (!/^s3:\/\/[^/]+\//.test(k)) ctx.addIssue({ code: 'custom', path: [k], message: 'keys are s3://bucket/ URL prefixes' });
  }
});

/** Where stores' settings come from: defaults for every S3 URL and per-prefix overrides. */
export interface StoreSettings {
  /** for every s3:// URL without its own entry (ABACUS_S3_ENDPOINT, ABACUS_S3_REGION, ABACUS_S3_FORCE_PATH_STYLE; credentials from the AWS_* chain) */
  s3: S3Settings;
  /** per URL prefix, the longest matching one wins */
  perPrefix: Record<string, S3Settings>;
}

/** The store settings of a configuration (configs/: ABACUS_S3_*, ABACUS_STORES_FILE); AWS_* credentials reach the SDK on their own. */
export interface StoreConfig {
  ABACUS_S3_ENDPOINT?: string;
  ABACUS_S3_REGION?: string;
  ABACUS_S3_FORCE_PATH_STYLE?: boolean;
  ABACUS_STORES_FILE?: string;
}

export function storeSettings(config: StoreConfig): StoreSettings {
  const s3: S3Settings = {};
  if (config.ABACUS_S3_ENDPOINT) s3.endpoint = config.ABACUS_S3_ENDPOINT;
  if (config.ABACUS_S3_REGION) s3.region = config.ABACUS_S3_REGION;
  if (config.ABACUS_S3_FORCE_PATH_STYLE !== undefined) s3.forcePathStyle = config.ABACUS_S3_FORCE_PATH_STYLE;
  let perPrefix: Record<string, S3Settings> = {};
  const file = config.ABACUS_STORES_FILE;
  if (file) {
    let raw: unknown;
    try {
      raw = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (err) {
      throw new StoreError(`ABACUS_STORES_FILE (${file})`, `cannot read it as JSON: ${(err as Error).message}`, 'invalid');
    }
    const parsed = storesFileSchema.safeParse(raw);
    if (!parsed.success) {
      const i = parsed.error.issues[0];
      throw new StoreError(`ABACUS_STORES_FILE (${file})`, `${i.path.join('.') || '(root)'}: ${i.message}`, 'invalid');
    }
    perPrefix = parsed.data;
  }
  return { s3, perPrefix };
}

/** Opens stores by URL and keeps one client per bucket. */
export class StoreRegistry {
  private readonly open = new Map<string, ObjectStore>();

  constructor(private readonly settings: StoreSettings = { s3: {}, perPrefix: {} }) {}

  /** the S3 settings that apply to `url` (for tests and `abacus doctor`; never printed with secrets) */
  s3SettingsFor(url: string): S3Settings {
    const match = Object.keys(this.settings.perPrefix)
      .filter((p) => url.startsWith(p))
      .sort((a, b) => b.length - a.length)[0];
    return { ...this.settings.s3, ...(match ? this.settings.perPrefix[match] : {}) };
  }

  /** The store that holds `url` and the key prefix `url` names in it. */
  resolve(url: string | StoreLocation): { store: ObjectStore; prefix: string; location: StoreLocation } {
    const location = typeof url === 'string' ? parseStoreUrl(url) : url;
    if (location.scheme === 'file') {
      // a single file: its directory is the store, its name the prefix
      const isFile = fs.statSync(location.root, { throwIfNoEntry: false })?.isFile() ?? false;
      const root = isFile ? path.dirname(location.root) : location.root;
      let store = this.open.get(root);
      if (!store) this.open.set(root, (store = new FileStore(root)));
      return { store, prefix: isFile ? path.basename(location.root) : '', location };
    }
    const settings = this.s3SettingsFor(location.url);
    const id = `${location.bucket}\u0000${JSON.stringify(settings)}`;
    let store = this.open.get(id);
    if (!store) this.open.set(id, (store = new S3Store(location.bucket, settings)));
    return { store, prefix: location.prefix, location };
  }

  close(): void {
    for (const s of this.open.values()) if (s instanceof S3Store) s.destroy();
    this.open.clear();
  }
}
