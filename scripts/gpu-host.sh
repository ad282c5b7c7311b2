#!/usr/bin/env bash
# Runs the real platform (Postgres, Redis, api, one worker, CLI) on a bare GPU host: one with a CUDA
# driver but no Node.js, no Postgres, no Redis and no network.
#
#   bash scripts/gpu-host.sh pack     # here, after `npm ci && npm run build`: fills .gpu/ (< 56 MiB)
#   bash scripts/gpu-host.sh up       # there, from the repository root: unpack + start everything
#   bash scripts/gpu-host.sh status   # what runs, where, which runtime backend
#   bash scripts/gpu-host.sh down     # stop everything `up` started
#   bash scripts/gpu-host.sh clean    # down, then remove the prefix (database and data included)
#
# `pack` needs the built checkout (dist/, apps/web/dist, the CPU addon), nvcc for the CUDA addon (built
# when missing or older than its sources), `apt-get download` (Debian 12 packages of Postgres 15 and
# Redis), xz, strip and dpkg-deb. It writes .gpu/{node.xz,libduckdb.so.xz,app.tar.xz,servers.tar.xz,
# MANIFEST}: Node (stripped), the api / worker / CLI / migration bundled with esbuild into one file each
# (no node_modules), the few files that cannot be bundled (DuckDB's and the runtime's native addons,
# HiGHS' wasm, the API docs' assets), the web app, and Postgres + Redis with the shared libraries an
# Ubuntu 24.04 host may lack.
#
# `up` needs only bash, coreutils, tar, xz (or python3), and, as root, useradd + setpriv/runuser. It
# unpacks into ABACUS_GPU_PREFIX (default /tmp/abacus-gpu), starts Postgres (own cluster, trust auth,
# 127.0.0.1 only, run as a system user when root) and Redis, migrates, stores a local admin key, starts
# the api and one worker per GPU (CUDA_VISIBLE_DEVICES = its GPU; the GPUs are CUDA_VISIBLE_DEVICES when
# set, else every GPU nvidia-smi lists), each with ABACUS_RUNTIME_BACKEND=auto and
# ABACUS_WORKER_CONCURRENCY = 2 (a trial on its GPU and one CPU trial beside it; variables already set
# win), waits until the api is healthy and prints the runtime backend the worker chose. One process
# per GPU, not one over all: models of two GPUs trained in one process failed now and then
# (ABACUS_GPU_WORKERS=one starts a single worker over every GPU, for comparisons). Run it again: it keeps what runs and starts what does not.
# ABACUS_GPU_API_GPU=0 starts the api without the GPUs (CUDA_VISIBLE_DEVICES empty, its runtime on the
# CPU), as on an api host of its own: cost measurements then go to the GPU workers.
# Ports (the next free one when the default is taken; an explicitly set port must be free):
#   ABACUS_GPU_PG_PORT (5432)  ABACUS_GPU_REDIS_PORT (6379)  ABACUS_API_PORT (3000)
# Then: export PATH="$ABACUS_GPU_PREFIX/bin:$PATH"; abacus ... (the wrapper knows the api and the key).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU_DIR="$ROOT/.gpu"
PREFIX="${ABACUS_GPU_PREFIX:-/tmp/abacus-gpu}"
LIMIT_MIB="${ABACUS_GPU_LIMIT_MIB:-56}"
PG_VER=15
# Debian 12 packages whose files (and shared-library closure) the servers need
PG_DEBS="postgresql-$PG_VER postgresql-client-$PG_VER libpq5 redis-tools"
# Shared libraries the host supplies: glibc and the GCC runtime (never brought: they must match the
# host's loader), and libraries every Ubuntu 24.04 installation has under the same soname (required
# packages: zlib1g, libzstd1, liblz4-1, liblzma5, libsystemd0, libcap2, libgcrypt20, libgpg-error0,
# libselinux1, libpcre2-8-0, libcrypt1, libtinfo6, libpam0g, libaudit1, libcap-ng0, and apt's GnuTLS).
# Every other library is brought, even where Ubuntu has the same soname.
HOST_LIBS='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|lib(c|m|pthread|dl|rt|resolv|util|anl)\.so\.[0-9]+|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libz\.so\.1|libzstd\.so\.1|liblz4\.so\.1|liblzma\.so\.5|libsystemd\.so\.0|libcap\.so\.2|libgcrypt\.so\.20|libgpg-error\.so\.0|libselinux\.so\.1|libpcre2-8\.so\.0|libcrypt\.so\.1|libtinfo\.so\.6|libpam\.so\.0|libaudit\.so\.1|libcap-ng\.so\.0|libgnutls\.so\.30|libnettle\.so\.8|libhogweed\.so\.6|libgmp\.so\.10|libp11-kit\.so\.0|libffi\.so\.8|libtasn1\.so\.6|libidn2\.so\.0)$'

TMP_DIRS=()
cleanup() { [ "${#TMP_DIRS[@]}" = 0 ] || rm -rf "${TMP_DIRS[@]}"; }
trap cleanup EXIT
new_tmp() { # var: a temporary directory, removed on exit
  local d
  d=$(mktemp -d)
  TMP_DIRS+=("$d")
  printf -v "$1" %s "$d"
}

say() { printf '\033[1m[gpu-host]\033[0m %s\n' "$*"; }
warn() { printf '\033[1;33m[gpu-host] %s\033[0m\n' "$*" >&2; }
die() { printf '\033[1;31m[gpu-host] %s\033[0m\n' "$*" >&2; exit 1; }
# x86 machine code compresses better with xz's BCJ filter in front (node: -0.8 MB, libduckdb: -1 MB)
XZ_CODE=(--x86 --lzma2=preset=9e)
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
fsize() { stat -c %s "$1"; }

# ---------------------------------------------------------------------------------------------- pack

soname_package() { # soname -> the Debian package that ships it
  case "$1" in
    libicu*.so.72) echo libicu72 ;;
    libldap-2.5.so.0 | liblber-2.5.so.0) echo libldap-2.5-0 ;;
    libsasl2.so.2) echo libsasl2-2 ;;
    libpq.so.5) echo libpq5 ;;
    liblzf.so.1) echo liblzf1 ;;
    libjemalloc.so.2) echo libjemalloc2 ;;
    libatomic.so.1) echo libatomic1 ;;
    libssl.so.3 | libcrypto.so.3) echo libssl3 ;;
    libxml2.so.2) echo libxml2 ;;
    libreadline.so.8) echo libreadline8 ;;
    *) dpkg -S "*/$1" 2>/dev/null | head -n1 | cut -d: -f1 ;;
  esac
}

find_lib() { # debroot soname
  local d
  for d in "$1/usr/lib/x86_64-linux-gnu" "$1/lib/x86_64-linux-gnu"; do
    [ -e "$d/$2" ] && { echo "$d/$2"; return; }
  done
  return 0
}

needed() { LC_ALL=C readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# the shared-library closure of $stage's binaries: copies every non-host library into $stage/lib,
# downloading (apt-get download) and unpacking the packages that ship them into $debroot
bring_libs() { # stage debroot debcache
  local stage=$1 debroot=$2 cache=$3 changed=1 so f pkg
  declare -A seen=()
  : >"$stage/.libs"
  while [ "$changed" = 1 ]; do
    changed=0
    while IFS= read -r f; do
      while IFS= read -r so; do
        [ -n "$so" ] || continue
        [[ "$so" =~ $HOST_LIBS ]] && { seen[$so]=host; continue; }
        [ -n "${seen[$so]:-}" ] && continue
        local src
        src=$(find_lib "$debroot" "$so")
        if [ -z "$src" ]; then
          pkg=$(soname_package "$so")
          [ -n "$pkg" ] || die "no Debian package known for $so (needed by $(basename "$f")): add it to soname_package"
          fetch_debs "$cache" "$pkg"
          dpkg-deb -x "$(deb_file "$cache" "$pkg")" "$debroot"
          src=$(find_lib "$debroot" "$so")
          [ -n "$src" ] || die "$pkg does not contain $so"
        fi
        pkg=$(soname_package "$so")
        cp -L "$src" "$stage/lib/$so"
        seen[$so]="$pkg"
        echo "$so $pkg" >>"$stage/.libs"
        changed=1
      done < <(needed "$f")
    done < <(find "$stage/pg/usr/lib/postgresql/$PG_VER/bin" "$stage/pg/usr/lib/postgresql/$PG_VER/lib" "$stage/redis/bin" "$stage/lib" -type f)
  done
  for so in "${!seen[@]}"; do [ "${seen[$so]}" = host ] && echo "$so" >>"$stage/.hostlibs"; done
  return 0
}

deb_file() { # cache pkg -> the cached .deb of the package's candidate version (apt-cache policy)
  local v
  v=$(apt-cache policy "$2" 2>/dev/null | awk '/Candidate:/ { print $2 }')
  [ -n "$v" ] && [ "$v" != "(none)" ] || die "apt knows no candidate of $2 (pack needs Debian 12's package lists: apt-get update)"
  echo "$1/${2}_${v//:/%3a}.deb"
}

fetch_debs() { # cache pkg... : downloads what the cache lacks (Debian 12, this machine's apt sources)
  local cache=$1
  shift
  local p tmp f
  for p in "$@"; do
    f=$(deb_file "$cache" "$p")
    [ -s "$f" ] && continue
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download -q "$p" >/dev/null 2>"$tmp/err") || {
      cat "$tmp/err" >&2
      rm -rf "$tmp"
      die "apt-get download $p failed"
    }
    mv "$tmp"/*.deb "$f"
    rm -rf "$tmp"
  done
}

pack_servers() { # out.tar.xz
  local out=$1 work cache
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "pack needs apt-get and dpkg-deb (Debian 12)"
  grep -qs 'VERSION_CODENAME=bookworm' /etc/os-release || warn "not Debian 12: the servers must come from Debian 12 (glibc 2.36) packages to run on Ubuntu 24.04"
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/abacus-gpu-pack/debs"
  mkdir -p "$cache"
  new_tmp work
  say "servers: Debian packages ($PG_DEBS) + the libraries they need"
  # shellcheck disable=SC2086
  fetch_debs "$cache" $PG_DEBS
  mkdir -p "$work/deb" "$work/stage/lib" "$work/stage/redis/bin"
  for p in $PG_DEBS; do dpkg-deb -x "$(deb_file "$cache" "$p")" "$work/deb"; done
  local s="$work/stage" pgl="usr/lib/postgresql/$PG_VER" pgs="usr/share/postgresql/$PG_VER"
  mkdir -p "$s/pg/$pgl/bin" "$s/pg/$pgl/lib" "$s/pg/$pgs/extension"
  # the cluster needs postgres + initdb + pg_ctl; pg_isready and psql for checks by hand
  for b in postgres initdb pg_ctl pg_isready psql; do cp "$work/deb/$pgl/bin/$b" "$s/pg/$pgl/bin/"; done
  # plpgsql and the snowball dictionaries are created by initdb, pgcrypto by the first migration;
  # no JIT (llvmjit + LLVM: the server runs with jit=off), no encoding conversions (UTF8 only)
  for l in plpgsql dict_snowball pgcrypto; do cp "$work/deb/$pgl/lib/$l.so" "$s/pg/$pgl/lib/"; done
  (cd "$work/deb/$pgs" && cp -r postgres.bki ./*.sql sql_features.txt errcodes.txt catalog_version timezonesets tsearch_data \
    postgresql.conf.sample pg_hba.conf.sample pg_ident.conf.sample "$s/pg/$pgs/")
  cp "$work/deb/$pgs/extension/"{plpgsql,pgcrypto}* "$s/pg/$pgs/extension/"
  # Debian's redis-server is redis-check-rdb under another name (the binary picks its role by argv[0])
  cp "$work/deb/usr/bin/redis-check-rdb" "$s/redis/bin/redis-server"
  cp "$work/deb/usr/bin/redis-cli" "$s/redis/bin/redis-cli"
  bring_libs "$s" "$work/deb" "$cache"
  strip --strip-unneeded "$s/lib/"*.so* "$s/pg/$pgl/bin/"* "$s/pg/$pgl/lib/"*.so "$s/redis/bin/"* 2>/dev/null || true
  {
    echo "postgres $(dpkg-deb -f "$(deb_file "$cache" "postgresql-$PG_VER")" Version) (Debian 12)"
    echo "redis $(dpkg-deb -f "$(deb_file "$cache" redis-tools)" Version) (Debian 12)"
    echo "brought libraries (soname package):"
    sort "$s/.libs" | sed 's/^/  /'
    echo "from the host:"
    sort -u "$s/.hostlibs" | tr '\n' ' ' | sed 's/^/  /'
    echo
  } >"$s/SERVERS"
  rm -f "$s/.libs" "$s/.hostlibs"
  sed 's/^/  /' "$s/SERVERS"
  tar -C "$s" -cf - . | xz -T0 "${XZ_CODE[@]}" >"$out.tmp"
  mv "$out.tmp" "$out"
}

# esbuild: one CommonJS file per entry, from the compiled dist/ (it keeps the decorator metadata Nest
# needs). `__dirname` / `__filename` in the project's own files are rewritten to what they are in
# dist/, relative to the unpacked app root, so path lookups (web app, private bench platform) still work;
# the runtime finds its addons under libs/runtime/build/Release as in a checkout.
bundle_js() { # out-dir
  ABACUS_BUNDLE_OUT="$1" ABACUS_ROOT="$ROOT" node - <<'JS'
const path = require('node:path');
const fs = require('node:fs');
const root = process.env.ABACUS_ROOT;
const out = process.env.ABACUS_BUNDLE_OUT;
const esbuild = require(path.join(root, 'node_modules', 'esbuild'));
// the worker's scoring and sample-build threads are entries of their own (the worker starts them from the file beside their module)
const entries = ['dist/apps/api/src/main.js', 'dist/apps/worker/src/main.js', 'dist/apps/cli/src/main.js', 'dist/libs/data/src/cli/migrate.js', 'dist/libs/workflows/src/score/score-thread.js', 'dist/libs/samples/src/build/build-thread.js'];
// optional or lazily loaded packages: absent at run time (their callers try/catch or never run here)
const absent = [
  '@tensorflow/*', 'onnxruntime-web', 'pg-native', 'pg-query-stream', 'msgpackr-extract',
  '@nestjs/microservices', '@nestjs/microservices/*', '@nestjs/websockets', '@nestjs/websockets/*', '@nestjs/platform-fastify',
  '@fastify/static', 'class-validator', 'class-transformer', 'class-transformer/*',
  'mysql', 'mysql2', 'sqlite3', 'better-sqlite3', 'oracledb', 'mssql', 'mongodb', 'redis', 'sql.js', '@sap/hana-client',
  '@sap/hana-client/*', 'typeorm-aurora-data-api-driver', 'react-native-sqlite-storage', '@google-cloud/spanner', 'hdb-pool',
];
// shipped as files beside the bundles (native code, wasm, static assets found through __dirname)
const shipped = ['@duckdb/node-bindings-*', 'highs', 'swagger-ui-dist', 'swagger-ui-dist/*'];
const rel = (p) => path.relative(root, p).split(path.sep).join('/');
const ownPaths = {
  name: 'own-paths',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (a) => {
      const r = rel(a.path);
      if (!r.startsWith('dist/')) return undefined;
      let src = await fs.promises.readFile(a.path, 'utf8');
      src = src
        .replace(/\b__dirname\b/g, `__abacus_path(${JSON.stringify(path.posix.dirname(r))})`)
        .replace(/\b__filename\b/g, `__abacus_path(${JSON.stringify(r)})`)
        .replace(/require\.resolve\((['"])@abacus\/runtime\/package\.json\1\)/g, '__abacus_path("libs/runtime/package.json")');
      return { contents: src, loader: 'js', resolveDir: path.dirname(a.path) };
    });
  },
};
// the compiled JS only: without this esbuild would follow tsconfig.json's paths to the TypeScript sources
// (and lose the decorator metadata tsc emitted)
const tsconfig = path.join(out, '.tsconfig.json');
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(tsconfig, '{}');
(async () => {
  for (const e of entries) {
    const up = path.posix.relative(path.posix.dirname(e), '.') || '.';
    const r = await esbuild.build({
      entryPoints: [path.join(root, e)],
      outfile: path.join(out, e),
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      // class names stay: TypeORM names migrations and Nest names providers by them
      keepNames: true,
      minifyWhitespace: true,
      minifySyntax: true,
      legalComments: 'none',
      logLevel: 'error',
      external: [...absent, ...shipped],
      banner: { js: `const __abacus_root=require("node:path").resolve(__dirname,${JSON.stringify(up)});const __abacus_path=(p)=>require("node:path").join(__abacus_root,p);` },
      plugins: [ownPaths],
      tsconfig,
      metafile: true,
    });
    if (r.errors.length) process.exit(1);
    const ts = Object.keys(r.metafile.inputs).filter((f) => /\.tsx?$/.test(f));
    if (ts.length) throw new Error(`${e}: bundled TypeScript sources (${ts[0]}, ...) instead of dist/`);
  }
  fs.rmSync(tsconfig);
})().catch((err) => {
  console.error(err.message || err);
  process.exit(1);
});
JS
}

pack_app() { # out.tar.xz
  local out=$1 a m
  new_tmp a
  say "app: bundling api, worker (and its scoring thread), CLI and migration (esbuild)"
  bundle_js "$a"
  mkdir -p "$a/apps/cli/bin" "$a/apps/web" "$a/libs/runtime/build/Release" "$a/node_modules/@duckdb/node-bindings-linux-x64" \
    "$a/node_modules/highs/build" "$a/node_modules/swagger-ui-dist"
  cp "$ROOT/apps/cli/bin/abacus.js" "$a/apps/cli/bin/"
  cp "$ROOT/apps/web/package.json" "$a/apps/web/"
  cp -r "$ROOT/apps/web/dist" "$a/apps/web/dist"
  cp "$ROOT/libs/runtime/package.json" "$a/libs/runtime/"
  cp "$ROOT/libs/runtime/build/Release/abacus_runtime.node" "$ROOT/libs/runtime/build/Release/abacus_runtime_cuda.node" "$a/libs/runtime/build/Release/"
  m="$ROOT/node_modules"
  # libduckdb.so travels as its own file (.gpu/libduckdb.so.xz): `up` puts it beside duckdb.node
  cp "$m/@duckdb/node-bindings-linux-x64/"{package.json,duckdb.node,LICENSE} "$a/node_modules/@duckdb/node-bindings-linux-x64/"
  cp "$m/highs/package.json" "$m/highs/LICENSE" "$a/node_modules/highs/"
  cp "$m/highs/build/highs.js" "$m/highs/build/highs.wasm" "$a/node_modules/highs/build/"
  (cd "$m/swagger-ui-dist" && cp package.json LICENSE absolute-path.js index.js swagger-ui-bundle.js swagger-ui-standalone-preset.js \
    swagger-ui.css index.css favicon-16x16.png favicon-32x32.png oauth2-redirect.html oauth2-redirect.js "$a/node_modules/swagger-ui-dist/")
  strip --strip-unneeded "$a/libs/runtime/build/Release/"*.node "$a/node_modules/@duckdb/node-bindings-linux-x64/duckdb.node" 2>/dev/null || true
  # smoke test: the bundled CLI starts with nothing but these files
  ln -s "$m/@duckdb/node-bindings-linux-x64/libduckdb.so" "$a/node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so"
  (cd / && node "$a/apps/cli/bin/abacus.js" --help >/dev/null) || die "the bundled CLI does not start"
  ! grep -l 'require\.resolve("@abacus' "$a"/dist/apps/*/src/main.js || die "a bundle still resolves @abacus/* at run time"
  rm "$a/node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so"
  (
    cd "$ROOT"
    echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "built $(date -u +%FT%TZ) by Node $(node -v)"
  ) >"$a/BUILD"
  tar -C "$a" -cf - . | xz -T0 -9e >"$out.tmp"
  mv "$out.tmp" "$out"
}

# xz of a stripped copy of $src, reused while $src is unchanged
pack_binary() { # src out label
  local src=$1 out=$2 key keyfile tmp
  key="$(sha256sum "$src" | cut -d' ' -f1) ${XZ_CODE[*]}"
  keyfile="${XDG_CACHE_HOME:-$HOME/.cache}/abacus-gpu-pack/$(basename "$out").key"
  mkdir -p "$(dirname "$keyfile")"
  if [ -s "$out" ] && [ -f "$keyfile" ] && [ "$(cat "$keyfile")" = "$key $(sha256sum "$out" | cut -d' ' -f1)" ]; then
    say "$3: unchanged ($(basename "$out") reused)"
    return
  fi
  say "$3: strip + xz (a minute or two)"
  tmp=$(mktemp)
  strip --strip-unneeded -o "$tmp" "$src" 2>/dev/null || cp "$src" "$tmp"
  xz -T0 "${XZ_CODE[@]}" -c "$tmp" >"$out.tmp"
  rm -f "$tmp"
  mv "$out.tmp" "$out"
  echo "$key $(sha256sum "$out" | cut -d' ' -f1)" >"$keyfile"
}

cuda_addon_fresh() {
  local f="$ROOT/libs/runtime/build/Release/abacus_runtime_cuda.node"
  [ -f "$f" ] && [ -z "$(find "$ROOT/libs/runtime/native" -type f -newer "$f" | head -n1)" ]
}

cmd_pack() {
  cd "$ROOT"
  local nodebin
  nodebin="$(command -v node)" || die "pack needs Node.js (the one it packs)"
  for t in xz strip readelf sha256sum; do command -v "$t" >/dev/null || die "pack needs $t"; done
  [ -f dist/apps/api/src/main.js ] && [ -f apps/web/dist/index.html ] && [ -f libs/runtime/build/Release/abacus_runtime.node ] \
    || die "build first: npm ci && npm run build"
  [ -d node_modules/esbuild ] || die "node_modules/esbuild is missing: npm ci"
  [ -f node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so ] || die "DuckDB's linux-x64 bindings are missing: npm ci"
  local stale
  stale=$(find apps/api/src apps/worker/src apps/cli/src libs/*/src configs migrations -name '*.ts' ! -name '*.spec.ts' -newer dist/apps/api/src/main.js 2>/dev/null | head -n3)
  [ -z "$stale" ] || warn "sources changed after the last build (e.g. $(echo "$stale" | head -n1)): run npm run build to pack them"
  if ! cuda_addon_fresh; then
    say "CUDA addon: missing or older than its sources; building it (scripts/build-cuda.sh)"
    bash scripts/build-cuda.sh >/dev/null || die "scripts/build-cuda.sh failed (needs nvcc): the GPU host needs the CUDA addon"
  fi
  mkdir -p "$GPU_DIR"
  pack_binary "$nodebin" "$GPU_DIR/node.xz" "node $(node -v)"
  pack_binary node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so "$GPU_DIR/libduckdb.so.xz" "libduckdb.so"
  pack_app "$GPU_DIR/app.tar.xz"
  pack_servers "$GPU_DIR/servers.tar.xz"
  (
    cd "$GPU_DIR"
    echo "abacus gpu-host pack, format 1"
    echo "node $(node -v)"
    sha256sum node.xz libduckdb.so.xz app.tar.xz servers.tar.xz
  ) >"$GPU_DIR/MANIFEST"
  local total=0 f s
  say "contents of .gpu/"
  while IFS= read -r f; do
    s=$(fsize "$f")
    total=$((total + s))
    printf '  %12s  %s\n' "$(mib "$s")" "${f#"$GPU_DIR"/}"
  done < <(find "$GPU_DIR" -type f | sort)
  printf '  %12s  total (limit %s MiB)\n' "$(mib "$total")" "$LIMIT_MIB"
  [ "$total" -le $((LIMIT_MIB * 1048576)) ] || die ".gpu/ is $(mib "$total"), over the limit of $LIMIT_MIB MiB"
  say "packed. On the GPU host, from the repository root: bash scripts/gpu-host.sh up"
}

# ------------------------------------------------------------------------------------------------ up

NODE="$PREFIX/node/bin/node"
APP="$PREFIX/app"
PGBIN="$PREFIX/pg/usr/lib/postgresql/$PG_VER/bin"
PGDATA="$PREFIX/pgdata"
RUN="$PREFIX/run"
LOGS="$PREFIX/logs"
STATE="$PREFIX/state.env"
PG_USER="${ABACUS_GPU_PG_USER:-abacus-pg}"

unxz_to() { # file.xz dest
  if command -v xz >/dev/null; then
    xz -dc "$1" >"$2"
  elif command -v python3 >/dev/null; then
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1" >"$2"
  else
    die "neither xz nor python3 is here to unpack $1"
  fi
}
untar_xz() { # file.tar.xz dir
  local t
  t=$(mktemp -p "$PREFIX")
  unxz_to "$1" "$t"
  tar -C "$2" -xf "$t"
  rm -f "$t"
}

port_busy() { # something listens on 127.0.0.1:port, or a socket holds it (bind test with the packed Node)
  "$NODE" -e '
    const s = require("node:net").createServer();
    s.once("error", () => process.exit(0));
    s.listen(Number(process.argv[1]), "127.0.0.1", () => s.close(() => process.exit(1)));' "$1"
}
pick_port() { # name env-value default
  local p
  if [ -n "$2" ]; then
    port_busy "$2" && die "$1: port $2 (set explicitly) is already taken on 127.0.0.1"
    echo "$2"
    return
  fi
  for p in "$3" $(seq $(($3 + 1)) $(($3 + 20))); do
    port_busy "$p" || { echo "$p"; return; }
  done
  die "$1: no free port in $3..$(($3 + 20))"
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

as_pg() { # a Postgres command, with the servers' libraries, as the Postgres user (root cannot run Postgres)
  local c=(env LD_LIBRARY_PATH="$PREFIX/lib" TZ=UTC "$@")
  if [ "$(id -u)" != 0 ]; then
    "${c[@]}"
  elif command -v setpriv >/dev/null; then
    setpriv --reuid="$PG_UID" --regid="$PG_GID" --clear-groups -- "${c[@]}"
  elif command -v runuser >/dev/null; then
    runuser -u "$PG_USER" -- "${c[@]}"
  else
    su -s /bin/sh "$PG_USER" -c "$(printf '%q ' "${c[@]}")"
  fi
}

pg_user_setup() {
  [ "$(id -u)" = 0 ] || return 0
  if ! id -u "$PG_USER" >/dev/null 2>&1; then
    if command -v useradd >/dev/null; then
      useradd --system --no-create-home --home-dir "$PREFIX" --shell /usr/sbin/nologin --user-group "$PG_USER" 2>/dev/null \
        || useradd --system --no-create-home --shell /bin/false "$PG_USER" \
        || die "useradd $PG_USER failed: Postgres refuses to run as root (set ABACUS_GPU_PG_USER to an existing user)"
      say "created system user $PG_USER (Postgres refuses to run as root)"
    else
      warn "no useradd: running Postgres as nobody"
      PG_USER=nobody
    fi
  fi
  PG_UID=$(id -u "$PG_USER")
  PG_GID=$(id -g "$PG_USER")
}

# the servers' libraries come first only for the servers: Node and the addons never see them
srv() { env LD_LIBRARY_PATH="$PREFIX/lib" "$@"; }

check_libs() { # report libraries the servers cannot find here
  local missing="" b
  for b in "$PGBIN/postgres" "$PGBIN/initdb" "$PGBIN/pg_ctl" "$PREFIX/redis/bin/redis-server" "$PREFIX/pg/usr/lib/postgresql/$PG_VER/lib/pgcrypto.so"; do
    missing+=$(srv ldd "$b" 2>&1 | awk '/not found/ { print $1 }' | tr '\n' ' ')
  done
  [ -z "${missing// /}" ] || die "shared libraries missing on this host: $missing(pack brings what Ubuntu 24.04 may lack; add these to it)"
  "$NODE" -v >/dev/null 2>&1 || die "the packed Node.js does not run here ($("$NODE" -v 2>&1 | head -n1)); a noexec file system? set ABACUS_GPU_PREFIX"
}

unpack() {
  [ -f "$GPU_DIR/MANIFEST" ] || die "$GPU_DIR/MANIFEST is missing: run \`bash scripts/gpu-host.sh pack\` on the build machine and bring .gpu/ along"
  [ "$(uname -m)" = x86_64 ] || die "this package is for x86_64 Linux, not $(uname -m)"
  (cd "$GPU_DIR" && sed -n '3,$p' MANIFEST | sha256sum -c --quiet -) || die ".gpu/ is incomplete or damaged (sha256 mismatch against .gpu/MANIFEST)"
  mkdir -p "$PREFIX"
  chmod 755 "$PREFIX"
  if cmp -s "$GPU_DIR/MANIFEST" "$PREFIX/MANIFEST" && [ -x "$NODE" ] && [ -f "$APP/BUILD" ]; then
    say "package already unpacked in $PREFIX"
    return
  fi
  if [ -f "$PREFIX/MANIFEST" ]; then
    say "a different package is unpacked in $PREFIX: stopping its processes and replacing it (data kept)"
    cmd_down
  fi
  say "unpacking into $PREFIX"
  rm -rf "$PREFIX/node" "$APP" "$PREFIX/pg" "$PREFIX/lib" "$PREFIX/redis/bin" "$PREFIX/MANIFEST"
  mkdir -p "$PREFIX/node/bin" "$APP"
  unxz_to "$GPU_DIR/node.xz" "$NODE.tmp"
  chmod 755 "$NODE.tmp"
  mv "$NODE.tmp" "$NODE"
  untar_xz "$GPU_DIR/app.tar.xz" "$APP"
  unxz_to "$GPU_DIR/libduckdb.so.xz" "$APP/node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so"
  untar_xz "$GPU_DIR/servers.tar.xz" "$PREFIX"
  cp "$GPU_DIR/MANIFEST" "$PREFIX/MANIFEST"
}

start_postgres() {
  local pgport
  if [ -f "$PGDATA/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
    pgport=$(sed -n 4p "$PGDATA/postmaster.pid")
    say "Postgres: already running on 127.0.0.1:$pgport"
    [ -z "${ABACUS_GPU_PG_PORT:-}" ] || [ "$ABACUS_GPU_PG_PORT" = "$pgport" ] || warn "ABACUS_GPU_PG_PORT=$ABACUS_GPU_PG_PORT ignored: down first to move it"
    PG_PORT=$pgport
    return
  fi
  PG_PORT=$(pick_port Postgres "${ABACUS_GPU_PG_PORT:-}" 5432)
  mkdir -p "$RUN/pg" "$LOGS"
  touch "$LOGS/postgres.log"
  if [ "$(id -u)" = 0 ]; then chown "$PG_UID:$PG_GID" "$RUN/pg" "$LOGS/postgres.log"; fi
  as_pg test -x "$PGBIN/postgres" || die "the Postgres user $PG_USER cannot reach $PGBIN: use a prefix every user may enter (ABACUS_GPU_PREFIX)"
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    say "Postgres: new cluster in $PGDATA"
    rm -rf "$PGDATA"
    mkdir -p "$PGDATA"
    chmod 700 "$PGDATA"
    if [ "$(id -u)" = 0 ]; then chown "$PG_UID:$PG_GID" "$PGDATA"; fi
    # C locale + UTF8: no locale data needed from the host
    as_pg "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust --locale=C --encoding=UTF8 >"$LOGS/initdb.log" 2>&1 \
      || { tail -n 30 "$LOGS/initdb.log" >&2; die "initdb failed (log: $LOGS/initdb.log)"; }
    # without the host's time-zone files only GMT is known (built in)
    local tz=UTC
    [ -f /usr/share/zoneinfo/UTC ] || tz=GMT
    cat >>"$PGDATA/postgresql.conf" <<CONF

# abacus gpu-host: a throwaway cluster for a benchmark host
listen_addresses = '127.0.0.1'
jit = off
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
shared_buffers = 512MB
timezone = '$tz'
log_timezone = '$tz'
CONF
  fi
  say "Postgres: starting on 127.0.0.1:$PG_PORT"
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$LOGS/postgres.log" -w -t 60 \
    -o "-p $PG_PORT -k $RUN/pg -c listen_addresses=127.0.0.1" start >/dev/null \
    || { tail -n 30 "$LOGS/postgres.log" >&2; die "Postgres did not start (log: $LOGS/postgres.log)"; }
  srv "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -t 30 || die "Postgres does not answer on 127.0.0.1:$PG_PORT"
}

redis_ping() { srv "$PREFIX/redis/bin/redis-cli" -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; }

start_redis() {
  if alive "$RUN/redis.pid"; then
    REDIS_PORT=$(sed -n 's/^REDIS_PORT=//p' "$STATE" 2>/dev/null)
    if [ -n "$REDIS_PORT" ] && redis_ping "$REDIS_PORT"; then
      say "Redis: already running on 127.0.0.1:$REDIS_PORT"
      [ -z "${ABACUS_GPU_REDIS_PORT:-}" ] || [ "$ABACUS_GPU_REDIS_PORT" = "$REDIS_PORT" ] || warn "ABACUS_GPU_REDIS_PORT=$ABACUS_GPU_REDIS_PORT ignored: down first to move it"
      return
    fi
  fi
  REDIS_PORT=$(pick_port Redis "${ABACUS_GPU_REDIS_PORT:-}" 6379)
  mkdir -p "$PREFIX/redis/data" "$RUN" "$LOGS"
  say "Redis: starting on 127.0.0.1:$REDIS_PORT"
  # BullMQ needs noeviction; nothing is persisted
  srv "$PREFIX/redis/bin/redis-server" --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no --daemonize yes \
    --maxmemory-policy noeviction --dir "$PREFIX/redis/data" --pidfile "$RUN/redis.pid" --logfile "$LOGS/redis.log" \
    || die "redis-server did not start"
  for _ in $(seq 1 50); do redis_ping "$REDIS_PORT" && return; sleep 0.2; done
  tail -n 20 "$LOGS/redis.log" >&2
  die "Redis does not answer on 127.0.0.1:$REDIS_PORT (log: $LOGS/redis.log)"
}

write_env() {
  cat >"$STATE" <<ENV
PG_PORT=$PG_PORT
REDIS_PORT=$REDIS_PORT
API_PORT=$API_PORT
ENV
  # defaults for every process of the platform here; variables already set win
  cat >"$PREFIX/abacus.env" <<ENV
: "\${ABACUS_DATABASE_URL:=postgres://postgres@127.0.0.1:$PG_PORT/abacus}"
: "\${ABACUS_REDIS_URL:=redis://127.0.0.1:$REDIS_PORT}"
: "\${ABACUS_API_HOST:=127.0.0.1}"
: "\${ABACUS_API_PORT:=$API_PORT}"
: "\${ABACUS_API_URL:=http://127.0.0.1:$API_PORT}"
: "\${ABACUS_DATA_DIR:=$PREFIX/data}"
: "\${ABACUS_RUNTIME_BACKEND:=auto}"
: "\${ABACUS_CREDENTIALS_FILE:=$PREFIX/credentials.json}"
# per worker (one per GPU): a trial on its GPU and one more for the CPU trials (IV scoring) beside it
: "\${ABACUS_WORKER_CONCURRENCY:=$(( $(gpu_count) > 0 ? 2 : 1 ))}"
export ABACUS_DATABASE_URL ABACUS_REDIS_URL ABACUS_API_HOST ABACUS_API_PORT ABACUS_API_URL ABACUS_DATA_DIR ABACUS_RUNTIME_BACKEND ABACUS_CREDENTIALS_FILE ABACUS_WORKER_CONCURRENCY
ENV
  mkdir -p "$PREFIX/bin"
  cat >"$PREFIX/bin/abacus" <<SH
#!/usr/bin/env bash
# the CLI of the platform that scripts/gpu-host.sh started in $PREFIX
. "$PREFIX/abacus.env"
exec "$NODE" "$APP/apps/cli/bin/abacus.js" "\$@"
SH
  cat >"$PREFIX/bin/psql" <<SH
#!/usr/bin/env bash
# psql on the cluster of $PREFIX (database abacus unless told otherwise)
export PGHOST=127.0.0.1 PGPORT=$PG_PORT PGUSER=postgres PGDATABASE="\${PGDATABASE:-abacus}"
LD_LIBRARY_PATH="$PREFIX/lib" exec "$PGBIN/psql" "\$@"
SH
  cat >"$PREFIX/bin/redis-cli" <<SH
#!/usr/bin/env bash
LD_LIBRARY_PATH="$PREFIX/lib" exec "$PREFIX/redis/bin/redis-cli" -h 127.0.0.1 -p $REDIS_PORT "\$@"
SH
  chmod 755 "$PREFIX/bin/abacus" "$PREFIX/bin/psql" "$PREFIX/bin/redis-cli"
  ln -sfn "$NODE" "$PREFIX/bin/node"
}

# GPUs nvidia-smi lists (0 without it)
# the GPUs the workers use, one worker each: CUDA_VISIBLE_DEVICES when set, else every GPU listed
gpu_list() {
  if [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
    echo "$CUDA_VISIBLE_DEVICES" | tr ',' ' '
  elif [ "$(gpu_count)" -gt 0 ]; then
    seq -s ' ' 0 $(($(gpu_count) - 1))
  fi
}

# pid files of the running workers (worker, worker-1, worker-2, ...)
worker_names() {
  local f
  for f in "$RUN"/worker.pid "$RUN"/worker-*.pid; do [ -e "$f" ] && basename "$f" .pid; done
  return 0
}

gpu_count() {
  local n
  n=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU ' || true)
  echo "${n:-0}"
}

# runs Node with the platform's environment (not the servers' libraries)
pnode() { (. "$PREFIX/abacus.env" && "$NODE" "$@"); }

api_healthy() {
  pnode -e 'fetch(process.env.ABACUS_API_URL + "/api/v1/health").then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))'
}

# A worker runs under a supervisor loop (its pid in the pid file): when the worker exits non-zero (it
# exits 75 after a GPU fault lost its CUDA context, or it crashed) the loop starts it again; SIGTERM to
# the loop (`down`) stops the worker and ends the loop.
SUPERVISE='echo $$ >"$0"
child=0 stop=0
trap '"'"'stop=1; [ "$child" = 0 ] || kill -TERM "$child" 2>/dev/null'"'"' TERM INT
while :; do
  "$@" &
  child=$!
  wait "$child"; rc=$?
  while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
  [ "$stop" = 1 ] && exit 0
  [ "$rc" = 0 ] && exit 0
  echo "[gpu-host] $(date -u +%Y-%m-%dT%H:%M:%SZ) worker exited with status $rc: restarting it"
  sleep 1
done'

# per process started by this run: the first line of its log that is its own (earlier runs append to
# the same log; a process already running keeps 1, its whole log)
declare -A LOG_FROM=()

start_node_proc() { # name entry [supervise]
  LOG_FROM[$1]=1
  if alive "$RUN/$1.pid"; then
    say "$1: already running (pid $(cat "$RUN/$1.pid"))"
    return
  fi
  say "$1: starting (log $LOGS/$1.log)"
  [ -f "$LOGS/$1.log" ] && LOG_FROM[$1]=$(($(wc -l <"$LOGS/$1.log") + 1))
  rm -f "$RUN/$1.pid"
  (
    . "$PREFIX/abacus.env"
    cd "$APP"
    # its own session (survives the caller's terminal); the pid is written by the process itself
    if [ "${3:-}" = supervise ]; then
      exec setsid bash -c "$SUPERVISE" "$RUN/$1.pid" nohup "$NODE" "$APP/$2" >>"$LOGS/$1.log" 2>&1 </dev/null
    fi
    exec setsid bash -c 'echo $$ >"$0"; exec "$@"' "$RUN/$1.pid" nohup "$NODE" "$APP/$2" >>"$LOGS/$1.log" 2>&1 </dev/null
  ) &
  for _ in $(seq 1 50); do [ -s "$RUN/$1.pid" ] && return; sleep 0.1; done
  die "$1 did not start"
}

# where the CUDA addon will find cuBLASLt (it dlopens libcublasLt.so.13 through the loader's cache,
# $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64 or ABACUS_CUBLASLT); a toolkit found only
# elsewhere (/usr/local/cuda-13.x without the /usr/local/cuda link) is named in ABACUS_CUBLASLT
cuda_report() {
  local lt="" d
  if command -v nvidia-smi >/dev/null; then
    say "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n1)"
  fi
  if [ -n "${ABACUS_CUBLASLT:-}" ]; then
    say "cuBLASLt: $ABACUS_CUBLASLT (ABACUS_CUBLASLT)"
    return
  fi
  lt=$( (ldconfig -p 2>/dev/null | awk '/libcublasLt\.so\.13 / { print $NF; exit }') || true)
  for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    [ -z "$lt" ] && [ -n "$d" ] && [ -f "$d/lib64/libcublasLt.so.13" ] && lt="$d/lib64/libcublasLt.so.13"
  done
  if [ -n "$lt" ]; then
    say "cuBLASLt: $lt"
    return
  fi
  for d in /usr/local/cuda-13*/lib64 /usr/local/cuda-13*/targets/x86_64-linux/lib; do
    if [ -f "$d/libcublasLt.so.13" ]; then
      say "cuBLASLt: $d/libcublasLt.so.13 (passed to api and worker as ABACUS_CUBLASLT)"
      echo ": \"\${ABACUS_CUBLASLT:=$d/libcublasLt.so.13}\"; export ABACUS_CUBLASLT" >>"$PREFIX/abacus.env"
      return
    fi
  done
  warn "libcublasLt.so.13 not found (loader cache, \$CUDA_HOME/lib64, /usr/local/cuda*/lib64): the cuda backend needs it; set ABACUS_CUBLASLT=/path/to/libcublasLt.so.13"
}

cmd_up() {
  cd "$ROOT"
  unpack
  check_libs
  pg_user_setup
  mkdir -p "$RUN" "$LOGS" "$PREFIX/data"
  start_postgres
  start_redis
  if alive "$RUN/api.pid"; then
    API_PORT=$(sed -n 's/^API_PORT=//p' "$STATE")
  else
    API_PORT=$(pick_port api "${ABACUS_API_PORT:-}" 3000)
  fi
  write_env
  say "migrating the database"
  pnode "$APP/dist/libs/data/src/cli/migrate.js" up | sed 's/^/  /'
  say "local admin key (stored in $PREFIX/credentials.json for the CLI)"
  "$PREFIX/bin/abacus" keys bootstrap | sed 's/^/  /'
  cuda_report
  if [ "${ABACUS_GPU_API_GPU:-1}" = 0 ]; then
    # the api as on a host of its own without a GPU (its runtime on the CPU); the workers keep the GPUs
    CUDA_VISIBLE_DEVICES= ABACUS_RUNTIME_BACKEND=cpu start_node_proc api dist/apps/api/src/main.js
  else
    start_node_proc api dist/apps/api/src/main.js
  fi
  local gpus k name started=(worker)
  read -r -a gpus <<<"$(gpu_list)"
  if [ "${#gpus[@]}" -gt 1 ] && [ "${ABACUS_GPU_WORKERS:-per-gpu}" != one ]; then
    say "GPUs ${gpus[*]}: one worker each"
    # ABACUS_GPU_HOSTS=separate (with ABACUS_STORE_URL): each worker its own data directory and cache,
    # as on separate hosts that share only the store, Redis and Postgres
    if [ "${ABACUS_GPU_HOSTS:-shared}" = separate ] && [ -z "${ABACUS_STORE_URL:-}" ]; then
      die "ABACUS_GPU_HOSTS=separate needs ABACUS_STORE_URL (the store the \"hosts\" share)"
    fi
    for k in "${!gpus[@]}"; do
      name=worker
      [ "$k" -gt 0 ] && name="worker-$k" && started+=("$name")
      if [ "${ABACUS_GPU_HOSTS:-shared}" = separate ]; then
        ABACUS_DATA_DIR="$PREFIX/host-$k" CUDA_VISIBLE_DEVICES=${gpus[$k]} start_node_proc "$name" dist/apps/worker/src/main.js supervise
      else
        CUDA_VISIBLE_DEVICES=${gpus[$k]} start_node_proc "$name" dist/apps/worker/src/main.js supervise
      fi
    done
  else
    start_node_proc worker dist/apps/worker/src/main.js supervise
  fi
  for i in $(seq 1 90); do
    api_healthy && break
    alive "$RUN/api.pid" || { tail -n 30 "$LOGS/api.log" >&2; die "the api exited (log: $LOGS/api.log)"; }
    [ "$i" = 90 ] && { tail -n 30 "$LOGS/api.log" >&2; die "the api did not become healthy in 90 s (log: $LOGS/api.log)"; }
    sleep 1
  done
  for name in "${started[@]}"; do
    for i in $(seq 1 60); do
      # (grep reads to the end: with grep -q, tail could die of SIGPIPE and fail the pipe under pipefail)
      tail -n +"${LOG_FROM[$name]:-1}" "$LOGS/$name.log" 2>/dev/null | grep 'listening on queues\|worker up' >/dev/null && break
      alive "$RUN/$name.pid" || { tail -n 30 "$LOGS/$name.log" >&2; die "$name exited (log: $LOGS/$name.log)"; }
      [ "$i" = 60 ] && { tail -n 30 "$LOGS/$name.log" >&2; die "$name did not come up in 60 s (log: $LOGS/$name.log)"; }
      sleep 1
    done
  done
  local backend
  backend=$(tail -n +"${LOG_FROM[worker]:-1}" "$LOGS/worker.log" | grep -o 'runtime backend: .*' | tail -n1 | sed 's/\x1b\[[0-9;]*m//g')
  cat <<MSG

  Abacus is running ($PREFIX).
    API        http://127.0.0.1:$API_PORT/api/v1  (docs /api/docs, web app /)
    worker(s)  ${started[*]} — ${backend:-runtime backend: (not logged; see $LOGS/worker.log)}
    Postgres   127.0.0.1:$PG_PORT   Redis 127.0.0.1:$REDIS_PORT
    logs       $LOGS/{api,worker,postgres,redis}.log
    CLI        export PATH="$PREFIX/bin:\$PATH"; abacus keys whoami
               (admin key in $PREFIX/credentials.json; or export ABACUS_API_KEY=...)
    stop       bash scripts/gpu-host.sh down

MSG
}

stop_pid() { # name pidfile
  alive "$2" || { rm -f "$2"; return 0; }
  local pid
  pid=$(cat "$2")
  say "stopping $1 (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$2"
}

cmd_down() {
  local name
  for name in $(worker_names); do stop_pid "$name" "$RUN/$name.pid"; done
  stop_pid api "$RUN/api.pid"
  if alive "$RUN/redis.pid"; then stop_pid redis "$RUN/redis.pid"; fi
  if [ -f "$PGDATA/postmaster.pid" ]; then
    PG_USER=$(stat -c %U "$PGDATA")
    PG_UID=$(stat -c %u "$PGDATA")
    PG_GID=$(stat -c %g "$PGDATA")
    say "stopping Postgres"
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >/dev/null 2>&1 || {
      local pid
      pid=$(head -n1 "$PGDATA/postmaster.pid" 2>/dev/null || true)
      [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
    }
  fi
  return 0
}

cmd_status() {
  [ -d "$PREFIX" ] || { say "nothing in $PREFIX"; return 0; }
  local p
  for p in api $(worker_names | grep . || echo worker) redis; do
    if alive "$RUN/$p.pid"; then echo "  $p: running (pid $(cat "$RUN/$p.pid"))"; else echo "  $p: stopped"; fi
  done
  if [ -f "$PGDATA/postmaster.pid" ] && kill -0 "$(head -n1 "$PGDATA/postmaster.pid")" 2>/dev/null; then
    echo "  postgres: running (pid $(head -n1 "$PGDATA/postmaster.pid"), port $(sed -n 4p "$PGDATA/postmaster.pid"))"
  else
    echo "  postgres: stopped"
  fi
  [ -f "$STATE" ] && sed 's/^/  /' "$STATE"
  if [ -f "$PREFIX/abacus.env" ] && alive "$RUN/api.pid"; then
    if api_healthy; then echo "  api health: ok"; else echo "  api health: not answering"; fi
  fi
  [ -f "$LOGS/worker.log" ] && grep -o 'runtime backend: .*' "$LOGS/worker.log" | tail -n1 | sed 's/\x1b\[[0-9;]*m//g; s/^/  worker log: /'
  [ -f "$APP/BUILD" ] && sed 's/^/  package: /' "$APP/BUILD"
  return 0
}

case "${1:-}" in
  pack) cmd_pack ;;
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  clean)
    cmd_down
    say "removing $PREFIX"
    rm -rf "$PREFIX"
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
    [ -z "${1:-}" ] || exit 2
    ;;
esac
