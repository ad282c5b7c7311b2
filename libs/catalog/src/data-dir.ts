import fs from 'node:fs';
import path from 'node:path';

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

/**
 * The layout of the data directory; the only place that turns ids and stored relative paths into
 * paths. Every path it hands out stays inside the directory: no absolute paths, no `..` segments, and
 * no symbolic link on the way that resolves outside it (checked with realpath on each call).
 */
export class DataDir {
  readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
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

  ensure(relative: string): string {
    const dir = this.abs(relative);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  remove(relative: string): void {
    fs.rmSync(this.abs(relative), { recursive: true, force: true });
  }
}
