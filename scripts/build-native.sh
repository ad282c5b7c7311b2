#!/usr/bin/env bash
# Builds the runtime's native CPU addon (libs/runtime/build/Release/abacus_runtime.node).
# Needs only g++ and the Node headers (npm's nodedir); no CUDA. Portable x86-64 + AVX2 code,
# AVX-512 chosen at run time; never -march=native. Incremental, and serialised by a lock so
# concurrent callers (parallel test runs) do not wipe each other's build.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/libs/runtime"
gyp="$root/node_modules/.bin/node-gyp"
[ -x "$gyp" ] || gyp="$(command -v node-gyp || true)"
if [ -z "$gyp" ]; then echo "node-gyp not found: run npm install at the repository root" >&2; exit 1; fi
nodedir="${npm_config_nodedir:-}"
if [ -z "$nodedir" ] && [ -f /usr/include/node/node_api.h ]; then nodedir=/usr; fi
args=()
[ -n "$nodedir" ] && args+=(--nodedir="$nodedir")
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
(
  flock 9
  if [ ! -f build/Makefile ] || [ binding.gyp -nt build/Makefile ]; then "$gyp" configure "${args[@]}" >>"$log" 2>&1; fi
  "$gyp" build --release -j "$(nproc)" "${args[@]}" >>"$log" 2>&1
) 9>"/tmp/abacus-build-native.lock" || { cat "$log" >&2; exit 1; }
echo "built $(pwd)/build/Release/abacus_runtime.node"
