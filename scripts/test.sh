#!/usr/bin/env bash
# Command 2 of the quick start (and CI): install, make sure Postgres and Redis run, build, run every test.
# Tests use their own database and queue prefix per run, never the quick start's.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/services.sh

ensure_node
node scripts/lib/complete-lockfile.mjs --check || die "run: node scripts/lib/complete-lockfile.mjs"
install_deps
ensure_postgres
ensure_redis

say "building (native CPU runtime + TypeScript)"
npm run --silent build
say "type-checking code and tests"
npm run --silent typecheck
say "lint"
npx eslint --max-warnings 0 .

mkdir -p .data/test-results
rm -f .data/test-results/*.json
rc=0
run_project() { # name label [extra vitest args]
  local name=$1 label=$2; shift 2
  say "$label"
  npx vitest run --project "$name" --reporter=default --reporter=json \
    --outputFile.json=".data/test-results/$name.json" "$@" || rc=1
}
run_project unit "unit tests"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -f libs/runtime/build/Release/abacus_runtime_cuda.node ]; then
  run_project gpu "CUDA backend tests (GPU)"
else
  say "CUDA tests: skipped — no GPU (or no CUDA addon) on this machine; run them on a GPU host with: bash scripts/build-cuda.sh && npx vitest run --project gpu (or node libs/runtime/bench/dist/run-bench.js --parity)"
fi
run_project integration "integration tests (real Postgres + Redis)" --no-file-parallelism
run_project e2e "end-to-end tests (api + worker + CLI)" --no-file-parallelism

node -e '
  const fs = require("fs");
  let passed = 0, failed = 0, skipped = 0;
  for (const f of fs.readdirSync(".data/test-results")) {
    const r = JSON.parse(fs.readFileSync(".data/test-results/" + f, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests; skipped += r.numPendingTests + (r.numTodoTests || 0);
  }
  console.log(`${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ""));
  if (passed === 0) process.exit(1);
'
exit $rc
