import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalS3, type LocalS3 } from '../../../test/support/local-s3';
import { FileStore } from './file-store';
import { ObjectCache } from './object-cache';
import type { ObjectInfo, ObjectStore } from './object-store';
import { S3Store, s3Failure } from './s3-store';
import { StoreError } from './store-error';
import { StoreRegistry, storeSettings } from './store-registry';
import { parseStoreUrl } from './store-url';

let s3: LocalS3;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-store-spec-'));

beforeAll(async () => {
  s3 = await startLocalS3(['samples-a']);
});
afterAll(async () => {
  await s3.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('store URLs', () => {
  it('parses s3 and file locations and refuses what is neither', () => {
    expect(parseStoreUrl('s3://ads-logs/daily/')).toMatchObject({ scheme: 's3', bucket: 'ads-logs', prefix: 'daily/' });
    expect(parseStoreUrl('s3://ads-logs')).toMatchObject({ scheme: 's3', bucket: 'ads-logs', prefix: '' });
    expect(parseStoreUrl('file:///mnt/shared/x/')).toMatchObject({ scheme: 'file', root: '/mnt/shared/x' });
    expect(parseStoreUrl('/mnt/shared/x')).toMatchObject({ scheme: 'file', root: '/mnt/shared/x' });
    expect(() => parseStoreUrl('s3://A_b/x')).toThrow(/not a valid bucket name/);
    expect(() => parseStoreUrl('s3://bucket/a//b')).toThrow(/empty, "." or ".." segment/);
    expect(() => parseStoreUrl('relative/dir')).toThrow(/expected s3:\/\/bucket\/prefix\/ or file:\/\/\/absolute\/path\//);
    expect(() => parseStoreUrl('file:///mnt/../etc')).toThrow(/"\.\." segment/);
  });

  it('takes S3 settings from the environment and a per-bucket file, the longest prefix winning', () => {
    const file = path.join(tmp, 'stores.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        's3://logs/': { endpoint: 'http://10.0.0.1:9000', accessKeyId: 'k1', secretAccessKey: 's1' },
        's3://logs/eu/': { region: 'eu-west-1' },
      }),
    );
    const reg = new StoreRegistry(storeSettings({ ABACUS_S3_REGION: 'us-east-2', ABACUS_STORES_FILE: file }));
    expect(reg.s3SettingsFor('s3://other/x')).toEqual({ region: 'us-east-2' });
    expect(reg.s3SettingsFor('s3://logs/eu/x')).toEqual({ region: 'eu-west-1' });
    expect(reg.s3SettingsFor('s3://logs/us/x')).toMatchObject({ endpoint: 'http://10.0.0.1:9000', accessKeyId: 'k1' });
    fs.writeFileSync(file, JSON.stringify({ 'logs/': {} }));
    expect(() => storeSettings({ ABACUS_STORES_FILE: file })).toThrow(/logs\/: keys are s3:\/\/bucket\/ URL prefixes/);
  });
});

const stores: [string, () => ObjectStore][] = [
  ['file store', () => new FileStore(fs.mkdtempSync(path.join(tmp, 'fs-')))],
  ['S3 (local endpoint)', () => new S3Store('samples-a', { endpoint: s3.endpoint, ...s3.credentials })],
];

describe.each(stores)('%s', (_, make) => {
  let store: ObjectStore;
  let run = 0;
  const base = () => `run${run}/`;
  beforeAll(() => {
    store = make();
    run += 1;
  });

  it('lists hive partitions under a prefix in key order, with sizes and ETags', async () => {
    await store.upload(`${base()}ds/dt=2026-11-20/part-1.parquet`, Buffer.from('aaaa'));
    await store.upload(`${base()}ds/dt=2026-11-21/part-0.parquet`, Buffer.from('bbbbbb'));
    await store.upload(`${base()}ds/_SUCCESS`, Buffer.from(''));
    await store.upload(`${base()}dsx/other.parquet`, Buffer.from('c'));
    const all = await store.list(`${base()}ds/`);
    expect(all.map((o) => [o.key.slice(base().length), o.size])).toEqual([
      ['ds/_SUCCESS', 0],
      ['ds/dt=2026-11-20/part-1.parquet', 4],
      ['ds/dt=2026-11-21/part-0.parquet', 6],
    ]);
    expect(all.every((o) => o.etag.length > 0 && o.modified > 0)).toBe(true);
    expect((await store.list(`${base()}ds`)).length).toBe(4); // a key prefix, as on S3
    expect(await store.list(`${base()}nothing/`)).toEqual([]);
  });

  it('reads explicit byte ranges and heads objects; a missing one is null / not-found', async () => {
    const key = `${base()}r/bytes.bin`;
    await store.upload(key, Buffer.from('0123456789'));
    expect(Buffer.from(await store.read(key, 2, 5)).toString()).toBe('234');
    expect(Buffer.from(await store.read(key, 6, 10)).toString()).toBe('6789');
    expect(await store.head(key)).toMatchObject({ key, size: 10 });
    expect(await store.head(`${base()}r/missing`)).toBeNull();
    await expect(store.read(`${base()}r/missing`, 0, 1)).rejects.toMatchObject({ name: 'StoreError', code: 'not-found' });
  });

  it('streams a large upload (multipart on S3) and a download into a file, atomically', async () => {
    const key = `${base()}big/blob.bin`;
    const part = Buffer.alloc(1 << 20, 7);
    const body = Readable.from(
      (function* () {
        for (let i = 0; i < 20; i++) yield part; // 20 MiB: three 8 MiB parts
      })(),
    );
    const info = await store.upload(key, body);
    expect(info.size).toBe(20 << 20);
    const file = path.join(tmp, `dl-${run}-${Date.now()}.bin`);
    await store.download(key, file);
    expect(fs.statSync(file).size).toBe(20 << 20);
    expect(fs.readdirSync(path.dirname(file)).filter((n) => n.includes('.part-'))).toEqual([]);
    await store.remove([key, `${base()}big/absent`]);
    expect(await store.head(key)).toBeNull();
  });
});

describe('S3 failures name the place and the reason', () => {
  it('a missing bucket, an unreachable endpoint', async () => {
    await expect(new S3Store('no-such-bucket', { endpoint: s3.endpoint, ...s3.credentials }).check()).rejects.toMatchObject({
      code: 'no-bucket',
      message: 's3://no-such-bucket/: no such bucket',
    });
    await expect(new S3Store('no-such-bucket', { endpoint: s3.endpoint, ...s3.credentials }).list('x/')).rejects.toMatchObject({
      code: 'no-bucket',
    });
    const down = new S3Store('samples-a', { endpoint: 'http://127.0.0.1:1', ...s3.credentials });
    const err = await down.list('x/').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect(err).toMatchObject({
      code: 'unreachable',
      message: expect.stringMatching(/^s3:\/\/samples-a\/x\/: the endpoint cannot be reached \(ECONNREFUSED\)/),
    });
  });
});

describe('S3 errors as store errors', () => {
  // s3rver does not check signatures, so refused credentials are only seen against a real service:
  // here the SDK's error shapes for them
  it('access refused, and nothing of the request in the message', () => {
    const denied = s3Failure(
      's3://logs/x/',
      { name: 'AccessDenied', message: 'Access Denied', $metadata: { httpStatusCode: 403 } },
      'list',
    );
    expect(denied).toMatchObject({
      code: 'denied',
      message: "s3://logs/x/: access denied (AccessDenied): check the store's credentials",
    });
    const sig = s3Failure(
      's3://logs/x/',
      {
        name: 'SignatureDoesNotMatch',
        message: 'The request signature we calculated does not match',
        $metadata: { httpStatusCode: 403 },
      },
      'list',
    );
    expect(sig.code).toBe('denied');
    const other = s3Failure(
      's3://logs/x/',
      { name: 'SlowDown', message: 'Please reduce your request rate.', $metadata: { httpStatusCode: 503 } },
      'read',
    );
    expect(other.message).toBe('s3://logs/x/: read failed: SlowDown (HTTP 503): Please reduce your request rate.');
  });
});

describe('object cache', () => {
  it('fetches once, serves later uses from disk, and keeps within its bound, least recently used out', async () => {
    const store = new FileStore(fs.mkdtempSync(path.join(tmp, 'src-')));
    const infos: ObjectInfo[] = [];
    for (let i = 0; i < 5; i++) infos.push(await store.upload(`o${i}.bin`, Buffer.alloc(1000, i)));
    const cache = new ObjectCache(fs.mkdtempSync(path.join(tmp, 'cache-')), 3000);
    const a = await cache.acquire(store, infos[0]);
    expect(a.fetched).toBe(true);
    expect(fs.readFileSync(a.file)[0]).toBe(0);
    a.release();
    const again = await cache.acquire(store, infos[0]);
    expect(again.fetched).toBe(false);
    again.release();
    for (let i = 1; i < 5; i++) {
      const h = await cache.acquire(store, infos[i]);
      h.release();
      await new Promise((r) => setTimeout(r, 15)); // distinct mtimes
    }
    expect(await cache.usedBytes()).toBeLessThanOrEqual(3000);
    // o0 was the least recently used: gone; o4 is there
    expect((await cache.acquire(store, infos[4])).fetched).toBe(false);
    expect((await cache.acquire(store, infos[0])).fetched).toBe(true);
  });

  it('a changed object (new ETag) is a new entry; a file in use survives eviction by another cache on the same directory', async () => {
    const store = new FileStore(fs.mkdtempSync(path.join(tmp, 'src-')));
    const dir = fs.mkdtempSync(path.join(tmp, 'cache-'));
    const one = new ObjectCache(dir, 1500);
    const two = new ObjectCache(dir, 1500); // another worker process on the host
    const v1 = await store.upload('x.bin', Buffer.alloc(1000, 1));
    const held = await one.acquire(store, v1);
    await new Promise((r) => setTimeout(r, 20));
    const v2 = await store.upload('x.bin', Buffer.alloc(1000, 2));
    expect(v2.etag).not.toBe(v1.etag);
    const h2 = await two.acquire(store, v2);
    expect(h2.fetched).toBe(true);
    expect(fs.readFileSync(h2.file)[0]).toBe(2);
    const y = await two.acquire(store, await store.upload('y.bin', Buffer.alloc(1000, 3)));
    // over the bound: v1 is in use by `one` and is not evicted; its reader still reads the whole file
    expect(fs.readFileSync(held.file).length).toBe(1000);
    expect(fs.readFileSync(held.file)[0]).toBe(1);
    held.release();
    h2.release();
    y.release();
    await one.evict();
    expect(await one.usedBytes()).toBeLessThanOrEqual(1500);
  });

  it('two processes fetching the same objects at once end with whole files and one entry each', async () => {
    const store = new S3Store('samples-a', { endpoint: s3.endpoint, ...s3.credentials });
    const infos: ObjectInfo[] = [];
    for (let i = 0; i < 4; i++) infos.push(await store.upload(`cc/o${i}.bin`, Buffer.alloc(300_000, i + 1)));
    const dir = fs.mkdtempSync(path.join(tmp, 'cache-'));
    const caches = [new ObjectCache(dir, 10 << 20), new ObjectCache(dir, 10 << 20)];
    const hits = await Promise.all(caches.flatMap((c) => infos.map((i) => c.acquire(store, i))));
    for (const [k, h] of hits.entries()) {
      const b = fs.readFileSync(h.file);
      expect(b.length).toBe(300_000);
      expect(b[299_999]).toBe((k % 4) + 1);
      h.release();
    }
    const names = fs.readdirSync(dir);
    expect(names.filter((n) => /^[0-9a-f]{40}$/.test(n)).length).toBe(4);
    expect(names.filter((n) => n.includes('.part-') || n.includes('.use-'))).toEqual([]);
  });
});
