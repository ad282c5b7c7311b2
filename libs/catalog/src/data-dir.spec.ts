import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileStore, ObjectCache } from '@abacus/store';
import { DataDir, PathEscapeError } from './data-dir';

describe('DataDir confinement', () => {
  let base: string;
  let root: string;
  let outside: string;

  beforeEach(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-datadir-'));
    root = path.join(base, 'data');
    outside = path.join(base, 'outside');
    fs.mkdirSync(path.join(root, 'sample-sets'), { recursive: true });
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'secret.parquet'), 'x');
  });
  afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

  it('resolves ordinary relative paths, existing or not', () => {
    const d = new DataDir(root);
    expect(d.abs('sample-sets/abc/data.parquet')).toBe(path.join(root, 'sample-sets/abc/data.parquet'));
    expect(d.abs('models/k/meta.json')).toBe(path.join(root, 'models/k/meta.json'));
  });

  it('refuses .. segments and absolute paths', () => {
    const d = new DataDir(root);
    expect(() => d.abs('../outside/secret.parquet')).toThrow(PathEscapeError);
    expect(() => d.abs('sample-sets/../../outside/secret.parquet')).toThrow(/contains "\.\."/);
    expect(() => d.abs('sample-sets/x/..')).toThrow(/contains "\.\."/);
    expect(() => d.abs(path.join(outside, 'secret.parquet'))).toThrow(/absolute/);
    expect(() => d.abs('')).toThrow(PathEscapeError);
  });

  it('refuses a stored path through a directory symlink that points outside', () => {
    fs.symlinkSync(outside, path.join(root, 'sample-sets', 'evil'));
    const d = new DataDir(root);
    expect(() => d.abs('sample-sets/evil/secret.parquet')).toThrow(/symbolic link/);
    // also for a file that does not exist yet under the link (a write would land outside)
    expect(() => d.abs('sample-sets/evil/new/data.parquet')).toThrow(/symbolic link/);
  });

  it('refuses a file symlink that points outside, and a dangling one', () => {
    fs.symlinkSync(path.join(outside, 'secret.parquet'), path.join(root, 'sample-sets', 'data.parquet'));
    fs.symlinkSync(path.join(outside, 'missing'), path.join(root, 'sample-sets', 'dangling'));
    const d = new DataDir(root);
    expect(() => d.abs('sample-sets/data.parquet')).toThrow(/symbolic link/);
    expect(() => d.abs('sample-sets/dangling/x')).toThrow(/symbolic link/);
  });

  it('accepts symlinks that stay inside, and a data directory that is itself a symlink', () => {
    fs.mkdirSync(path.join(root, 'real'));
    fs.symlinkSync(path.join(root, 'real'), path.join(root, 'sample-sets', 'alias'));
    const linkedRoot = path.join(base, 'data-link');
    fs.symlinkSync(root, linkedRoot);
    expect(new DataDir(root).abs('sample-sets/alias/f.parquet')).toBe(path.join(root, 'sample-sets/alias/f.parquet'));
    expect(new DataDir(linkedRoot).abs('sample-sets/x')).toBe(path.join(linkedRoot, 'sample-sets/x'));
  });
});

describe('DataDir with a deployment store (two hosts, one file store)', () => {
  let base: string;
  const host = (name: string, store: FileStore) => {
    const root = path.join(base, name);
    return new DataDir(root, {
      store,
      prefix: 'deploy/',
      url: store.url,
      cache: new ObjectCache(path.join(root, 'cache'), 2 ** 30),
    });
  };
  const write = (d: DataDir, rel: string, files: Record<string, string>) => {
    for (const [f, body] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(d.abs(rel), f)), { recursive: true });
      fs.writeFileSync(path.join(d.abs(rel), f), body);
    }
  };

  beforeEach(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-datadir-store-'));
    fs.mkdirSync(path.join(base, 'store'));
  });
  afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

  it('pushes files and directories (manifest last), pulls them on another host, and reads large ones through its cache', async () => {
    const store = new FileStore(path.join(base, 'store'));
    const a = host('a', store);
    const b = host('b', store);
    write(a, 'models/k1', { 'meta.json': '{"m":1}', 'w/model.bin': 'weights' });
    write(a, 'sample-sets/s1', { 'data.parquet': 'rows' });
    expect(await a.exists('models/k1')).toBe(true);
    expect(await b.exists('models/k1')).toBe(false);
    expect(await a.push('models/k1')).toBe(true);
    await a.push('sample-sets/s1/data.parquet');
    // a second push of a stored directory writes nothing (the first one stored wins)
    expect(await a.push('models/k1')).toBe(false);
    expect((await store.list('deploy/models/k1/')).map((o) => o.key)).toEqual([
      'deploy/models/k1/.abacus-dir.json',
      'deploy/models/k1/meta.json',
      'deploy/models/k1/w/model.bin',
    ]);
    expect(await b.exists('models/k1')).toBe(true);
    expect(fs.readFileSync(path.join(await b.pull('models/k1'), 'w/model.bin'), 'utf8')).toBe('weights');
    expect(fs.readFileSync(await b.pull('sample-sets/s1/data.parquet'), 'utf8')).toBe('rows');
    await expect(b.pull('models/none')).rejects.toThrow(/not on this host and not in the store/);

    // a large directory: through b's cache, fetched once, linked into a folder named like it
    const first = (await b.pullCached('models/k1'))!;
    expect(first.fetchedBytes).toBe(14);
    expect(path.basename(first.dir)).toBe('k1');
    expect(fs.readFileSync(path.join(b.abs(first.dir), 'meta.json'), 'utf8')).toBe('{"m":1}');
    const again = (await b.pullCached('models/k1'))!;
    expect(again.fetchedBytes).toBe(0);
    first.release();
    again.release();
    expect(fs.existsSync(b.abs(first.dir))).toBe(false);
    expect(await b.pullCached('models/none')).toBeNull();

    // the host that stored a directory moves its files into its own cache: nothing to fetch after
    await a.adoptPushed('models/k1');
    expect(fs.existsSync(a.abs('models/k1'))).toBe(false);
    const own = (await a.pullCached('models/k1'))!;
    expect(own.fetchedBytes).toBe(0);
    own.release();

    await a.removeShared('models/k1');
    expect(await store.list('deploy/models/')).toEqual([]);
    expect(await b.exists('models/k1')).toBe(true); // b's own copy stays until b removes it
  });
  it('keeps local copies of stored entries within their bound: least recently used out first, never within the grace period, read again from the store', async () => {
    const store = new FileStore(path.join(base, 'store'));
    const bounded = (name: string, graceMs: number) => {
      const root = path.join(base, name);
      return new DataDir(root, {
        store,
        prefix: 'deploy/',
        url: store.url,
        cache: null,
        localCopiesBytes: 20,
        localCopiesGraceMs: graceMs,
      });
    };
    const a = bounded('a', 0);
    const pause = () => new Promise((r) => setTimeout(r, 15));
    write(a, 'models/k1', { 'meta.json': '{"m":1}', 'w/model.bin': 'weights' }); // 14 bytes
    expect(await a.push('models/k1')).toBe(true);
    await pause();
    write(a, 'models/k2', { 'meta.json': '{"m":2}', 'w/model.bin': 'weight2' });
    expect(await a.push('models/k2')).toBe(true);
    // 28 bytes > 20: the older copy went, the store still has it
    expect(fs.existsSync(a.abs('models/k1'))).toBe(false);
    expect(fs.existsSync(a.abs('models/k2'))).toBe(true);
    expect(await a.exists('models/k1')).toBe(true);
    await pause();
    // read again: fetched from the store, and now k2 is the least recently used
    expect(fs.readFileSync(path.join(await a.pull('models/k1'), 'w/model.bin'), 'utf8')).toBe('weights');
    expect(fs.existsSync(a.abs('models/k2'))).toBe(false);
    await pause();
    // a use of a copy counts: after k1 is read again, a new upload (12 bytes) evicts nothing it needs not
    write(a, 'sample-sets/s1', { 'data.parquet': 'rows-of-data' });
    await a.pull('models/k1');
    await pause();
    await a.push('sample-sets/s1/data.parquet');
    expect(fs.existsSync(a.abs('models/k1'))).toBe(false); // 14 + 12 > 20: k1, the older use, went
    expect(fs.readFileSync(a.abs('sample-sets/s1/data.parquet'), 'utf8')).toBe('rows-of-data');
    expect(await a.trimLocalCopies()).toEqual([]);

    // within the grace period nothing goes, whatever the bound
    const g = bounded('g', 60_000);
    for (const k of ['models/k1', 'models/k2']) await g.pull(k);
    expect(fs.existsSync(g.abs('models/k1')) && fs.existsSync(g.abs('models/k2'))).toBe(true);
    expect(await g.trimLocalCopies()).toEqual([]);

    // what was written here and never stored is not a copy: never removed
    write(a, 'models/local-only', { 'meta.json': '{"only":"here, and much longer than the bound"}' });
    expect(await a.trimLocalCopies()).toEqual([]);
    expect(fs.existsSync(a.abs('models/local-only'))).toBe(true);
    // without a store nothing is noted or removed
    const alone = new DataDir(path.join(base, 'a'));
    expect(await alone.pull('models/local-only')).toBe(a.abs('models/local-only'));
    expect(fs.existsSync(a.abs('models/local-only'))).toBe(true);
  });
});

describe('DataDir scratch folders', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'abacus-scratch-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('are fresh folders under tmp/, removed by their owner, and swept only when their process is gone', () => {
    const d = new DataDir(root);
    const a = d.scratch('split');
    const b = d.scratch('split/x y');
    expect(a.dir).not.toBe(b.dir);
    expect(path.dirname(a.dir)).toBe(d.abs('tmp'));
    expect(path.basename(b.dir)).toMatch(new RegExp(`-${process.pid}-[0-9a-f]{8}-split_x_y$`));
    fs.writeFileSync(path.join(a.dir, 'rows.shard'), 'x');
    // a folder left by a process of this host that has exited (a worker killed mid-trial)
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    const left = path.join(path.dirname(a.dir), path.basename(a.dir).replace(`-${process.pid}-`, `-${gone}-`));
    fs.mkdirSync(left);
    fs.writeFileSync(path.join(left, 'rows.shard'), 'x');
    // another host's folder, and something else in tmp/
    const other = path.join(d.abs('tmp'), `scratch-elsewhere-${gone}-00000000-split`);
    fs.mkdirSync(other);
    fs.mkdirSync(path.join(d.abs('tmp'), `pulled-${gone}-00000000`));
    expect(d.sweepScratch()).toEqual([path.basename(left)]);
    expect(fs.existsSync(left)).toBe(false);
    expect(fs.existsSync(path.join(a.dir, 'rows.shard')) && fs.existsSync(b.dir) && fs.existsSync(other)).toBe(true);
    a.remove();
    expect(fs.existsSync(a.dir)).toBe(false);
    expect(d.sweepScratch()).toEqual([]);
    expect(fs.existsSync(b.dir)).toBe(true);
  });
});
