import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
