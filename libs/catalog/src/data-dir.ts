import fs from 'node:fs';
import path from 'node:path';

/** The layout of the data directory; the only place that turns ids into paths. */
export class DataDir {
  readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  abs(relative: string): string {
    const p = path.resolve(this.root, relative);
    if (p !== this.root && !p.startsWith(this.root + path.sep)) throw new Error(`path escapes the data directory: ${relative}`);
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
