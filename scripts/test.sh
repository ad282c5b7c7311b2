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
ensure_chromium

# independent steps side by side (each is mostly one thread), their output kept apart and shown on failure
together() { # label:command ...
  local pids=() labels=() logs=() fail=0 i
  for spec in "$@"; do
    local label=${spec%%:*} log
    log=$(mktemp)
    bash -c "${spec#*:}" >"$log" 2>&1 &
    pids+=($!) labels+=("$label") logs+=("$log")
  done
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
      say "${labels[$i]}: FAILED"
      cat "${logs[$i]}"
      fail=1
    fi
    rm -f "${logs[$i]}"
  done
  [ $fail = 0 ] || die "build, type-check or lint failed"
}
say "building (native CPU runtime, TypeScript and the web app, side by side)"
together "native runtime:npm run --silent build:native" "TypeScript:npm run --silent build:ts" "web app:npm run --silent build:web"
say "type-checking code and tests, and lint (side by side)"
together "type-check:npm run --silent typecheck" "lint:npx eslint --max-warnings 0 ."

mkdir -p .data/test-results
rm -f .data/test-results/*.json
rc=0
run_project() { # name label [extra vitest args]
  local name=$1 label=$2; shift 2
  say "$label"
  npx vitest run --project "$name" --reporter=default --reporter=json \
    --outputFile.json=".data/test-results/$name.json" "$@" || rc=1
}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -f libs/runtime/build/Release/abacus_runtime_cuda.node ]; then
  run_project gpu "CUDA backend tests (GPU)"
else
  say "CUDA tests: skipped — no GPU (or no CUDA addon) on this machine; run them on a GPU host with: bash scripts/build-cuda.sh && npx vitest run --project gpu (or node libs/runtime/bench/dist/run-bench.js --parity)"
fi
# unit, integration and end-to-end files side by side, three at a time (ABACUS_TEST_WORKERS), the
# slowest first (vitest.config.ts): each integration / e2e file has its own database, queue prefix, data
# directory and ports, and much of their time is spent waiting on jobs, processes and browsers, so a
# third file fills the cores they leave (on 2 cores: 770 s of tests, against 910 s two at a time)
say "unit tests, integration tests (real Postgres + Redis) and end-to-end tests (api + worker + CLI; the web app in headless Chromium)"
npx vitest run --project unit --project integration --project e2e --maxWorkers=${ABACUS_TEST_WORKERS:-3} --reporter=default --reporter=json \
  --outputFile.json=".data/test-results/all.json" || rc=1

# the Docker images, where an engine runs: build, start on spare ports, wait for health, tear down
if docker_works; then
  say "docker compose: building and starting postgres, redis, minio, migrate, api, worker (project abacus-ci)"
  export ABACUS_COMPOSE_PG_PORT=55432 ABACUS_COMPOSE_REDIS_PORT=56379 ABACUS_COMPOSE_API_PORT=53000 ABACUS_COMPOSE_S3_PORT=59000 ABACUS_COMPOSE_S3_CONSOLE_PORT=59001
  compose() { docker compose -p abacus-ci "$@"; }
  if compose up -d --build --quiet-pull >/dev/null; then
    ok=0
    for _ in $(seq 1 90); do
      if node -e 'fetch("http://127.0.0.1:53000/api/v1/health").then(r=>r.json()).then(h=>process.exit(h.status==="ok"?0:1),()=>process.exit(1))'; then ok=1; break; fi
      sleep 2
    done
    if [ $ok = 1 ] && compose logs worker | grep -q 'listening on queues'; then say "docker compose: api healthy, worker listening"
    else compose logs --tail 50 || true; say "docker compose: FAILED (api not healthy or worker not listening)"; rc=1; fi
  else
    say "docker compose: FAILED to build or start"; rc=1
  fi
  compose down -v >/dev/null 2>&1 || true
else
  say "docker compose: not exercised (no Docker engine on this machine)"
fi

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
