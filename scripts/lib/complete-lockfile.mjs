// Adds the other platforms' prebuilt binaries (optional dependencies such as @duckdb/node-bindings-*,
// @swc/core-*, @rollup/rollup-*) to package-lock.json when the registry this lock was made against
// did not list them, so `npm ci` accepts the lock everywhere. Each entry is pinned to the exact
// version its parent asks for and carries the os / cpu / libc that npm uses to skip it on other
// platforms. Run after `npm install` changes the lock: `node scripts/lib/complete-lockfile.mjs`.
// `--check` only reports (exit 1 when entries are missing).
import fs from 'node:fs';
import path from 'node:path';

const file = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../package-lock.json');
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const check = process.argv.includes('--check');

const OS = {
  darwin: 'darwin',
  linux: 'linux',
  win32: 'win32',
  android: 'android',
  freebsd: 'freebsd',
  openbsd: 'openbsd',
  openharmony: 'openharmony',
};
const CPU = {
  arm64: 'arm64',
  x64: 'x64',
  ia32: 'ia32',
  arm: 'arm',
  ppc64: 'ppc64',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
};

/** os / cpu / libc from a platform package's name, e.g. rollup-linux-arm64-musl. */
function platformOf(name) {
  const parts = path.basename(name).split('-');
  const os = parts.find((p) => OS[p]);
  const cpu = parts.find((p) => CPU[p]);
  if (!os || !cpu) return null;
  const out = { os: [os], cpu: [cpu] };
  if (os === 'linux') {
    if (parts.some((p) => p.startsWith('musl'))) out.libc = ['musl'];
    else if (parts.some((p) => p.startsWith('gnu'))) out.libc = ['glibc'];
  }
  return out;
}

const added = [];
for (const [key, entry] of Object.entries(lock.packages)) {
  for (const [dep, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = key ? `${key}/node_modules/${dep}` : `node_modules/${dep}`;
    if (lock.packages[nested] || lock.packages[`node_modules/${dep}`]) continue;
    const platform = platformOf(dep);
    if (!platform)
      throw new Error(`${dep} (optional dependency of ${key}) is missing from the lock and is not a platform binary`);
    if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(spec)) throw new Error(`${dep}: ${key} asks for "${spec}", not an exact version`);
    added.push(`${dep}@${spec}`);
    if (!check) lock.packages[`node_modules/${dep}`] = { version: spec, ...platform, optional: true };
  }
}
if (check) {
  if (added.length) {
    console.error(`package-lock.json lacks ${added.length} platform binaries: ${added.join(', ')}`);
    process.exit(1);
  }
} else {
  // npm keeps packages sorted by path
  lock.packages = Object.fromEntries(
    Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
  );
  fs.writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
  console.log(added.length ? `package-lock.json: added ${added.length} platform binaries` : 'package-lock.json: complete');
}
