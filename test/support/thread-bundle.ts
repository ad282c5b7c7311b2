import { mkdir, mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

const ROOT = path.resolve(__dirname, '../..');

/**
 * A worker-thread script bundled from its TypeScript source (in the built app the compiled script lies
 * beside its module), in a fresh directory under the repository's node_modules/.cache so that the
 * thread finds DuckDB's native package. The caller removes `dir`.
 */
export async function bundleThreadScript(entry: string): Promise<{ dir: string; script: string }> {
  await mkdir(path.join(ROOT, 'node_modules', '.cache'), { recursive: true });
  const dir = await mkdtemp(path.join(ROOT, 'node_modules', '.cache', `abacus-${path.basename(entry, '.ts')}-`));
  const script = path.join(dir, `${path.basename(entry, '.ts')}.js`);
  await build({
    entryPoints: [entry],
    outfile: script,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    tsconfig: path.join(ROOT, 'tsconfig.json'),
    external: ['@duckdb/*'],
    logLevel: 'silent',
  });
  return { dir, script };
}
