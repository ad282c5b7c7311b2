#!/usr/bin/env bash
# Command 1 of the quick start: install, make sure Postgres and Redis run, migrate, build, generate and
# register the demo world, start api + worker; the first run also creates a local admin key for the CLI.
# Safe to run again (it restarts api and worker).
# `bash scripts/quickstart.sh stop` stops api and worker.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/services.sh

RUN_DIR=.data/run
LOG_DIR=.data/logs
mkdir -p "$RUN_DIR" "$LOG_DIR"

stop_proc() {
  local pidfile="$RUN_DIR/$1.pid"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    say "stopping $1 (pid $(cat "$pidfile"))"
    kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$(cat "$pidfile")" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

if [ "${1:-}" = "stop" ]; then
  stop_proc api; stop_proc worker; exit 0
fi

ensure_node
install_deps
ensure_postgres
ensure_redis

say "building (native CPU runtime + TypeScript)"
npm run --silent build

say "migrating the database"
npm run --silent migrate

API_URL="${ABACUS_API_URL:-http://localhost:${ABACUS_API_PORT:-3000}}"
# a local admin key, straight into the database (no api needed); skipped when a working one is stored
say "local admin key"
npx --no-install abacus --api "$API_URL" keys bootstrap

stop_proc api
stop_proc worker
say "starting api and worker (logs in $LOG_DIR/)"
nohup node dist/apps/api/src/main.js >>"$LOG_DIR/api.log" 2>&1 &
echo $! >"$RUN_DIR/api.pid"
nohup node dist/apps/worker/src/main.js >>"$LOG_DIR/worker.log" 2>&1 &
echo $! >"$RUN_DIR/worker.pid"

for i in $(seq 1 60); do
  if node -e 'fetch(process.argv[1]+"/api/v1/health").then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$API_URL"; then break; fi
  kill -0 "$(cat "$RUN_DIR/api.pid")" 2>/dev/null || { tail -n 30 "$LOG_DIR/api.log"; die "the api exited"; }
  [ "$i" = 60 ] && { tail -n 30 "$LOG_DIR/api.log"; die "the api did not become healthy"; }
  sleep 1
done
kill -0 "$(cat "$RUN_DIR/worker.pid")" 2>/dev/null || { tail -n 30 "$LOG_DIR/worker.log"; die "the worker exited"; }

DEMO=.data/demo
if [ ! -f "$DEMO/ground_truth.json" ]; then
  say "generating the demo world (simulator, seed 7, 400,000 impressions, with derived effects for discover)"
  npx --no-install abacus sim --seed 7 --rows 400000 --derived-effects --out "$DEMO"
fi
say "registering the demo world"
npx --no-install abacus --api "$API_URL" demo --dir "$DEMO"

cat <<MSG

  Abacus is running.
    API            $API_URL/api/v1        (health: $API_URL/api/v1/health)
    API docs       $API_URL/api/docs
    Web app        $API_URL/  (experiments, features, data, models, serving, reports;
                   launch one: $API_URL/experiments/new?kind=subtract)
    Logs           $LOG_DIR/api.log, $LOG_DIR/worker.log
    Demo world     $DEMO/ (ground truth: $DEMO/ground_truth.json)
    API key        stored for $API_URL by \`abacus keys bootstrap\` (\`npx abacus keys whoami\`);
                   paste it into the web app's sign-in form; \`npx abacus keys create\` makes keys for others

  Try next:
    npx abacus experiment submit configs/examples/score.json --wait      # WOE/IV + PSI of every feature
    npx abacus experiment submit configs/examples/subtract.json --wait   # prune the feed model
    npx abacus experiment submit configs/examples/add.json --wait        # features proven in other lines
    npx abacus experiment submit configs/examples/multiply.json --wait   # borrow feed's and search's samples for mall
    npx abacus experiment submit configs/examples/divide.json --wait     # the feed model under cost budgets, as tiers
    npx abacus experiment list
    npx abacus iv $DEMO/samples/mall.parquet --label click
    npx abacus samples list
    npx abacus --help

  Stop api and worker:  bash scripts/quickstart.sh stop
MSG
