#!/usr/bin/env bash
# Bundles the bench runner into libs/runtime/bench/dist/run-bench.js (+ the addon beside it), so a
# machine with only `node` can run it.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
out="$root/libs/runtime/bench/dist"
mkdir -p "$out"
"$root/node_modules/.bin/esbuild" "$root/libs/runtime/src/bench/bench-main.ts" --bundle --platform=node --target=node20 \
  --external:@tensorflow/* --log-level=warning --outfile="$out/run-bench.js"
cp "$root/libs/runtime/build/Release/abacus_runtime.node" "$out/"
echo "$out/run-bench.js"
if [ -f "$root/libs/runtime/build/Release/abacus_runtime_cuda.node" ]; then cp "$root/libs/runtime/build/Release/abacus_runtime_cuda.node" "$out/"; fi
# the compute-cost stability bench (divide's cost ledger) beside it, with the MILP solver's files
"$root/node_modules/.bin/esbuild" "$root/libs/workflows/src/divide/cost-stability.bench.ts" --bundle --platform=node --target=node20 \
  --external:@tensorflow/* --external:highs --log-level=error --outfile="$out/cost-stability.js"
mkdir -p "$out/node_modules/highs/build"
cp "$root/node_modules/highs/package.json" "$out/node_modules/highs/"
cp "$root/node_modules/highs/build/highs.js" "$root/node_modules/highs/build/highs.wasm" "$out/node_modules/highs/build/"
echo "$out/cost-stability.js"
