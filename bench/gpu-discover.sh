#!/usr/bin/env bash
# On a GPU host with the platform up (bash scripts/gpu-host.sh up): one discover on the feed line of a
# simulated world with derived effects (ROWS impressions, feed about half), MAX candidates, the best TOP
# verified, timed end to end through the platform; then each trial's time and timings from the
# database. Results go to $OUT (default ./bench-out).
#   bash bench/gpu-discover.sh [rows] [max candidates] [top] [limit seconds]
#   WINDOWS=1h,1d,7d,30d (default: discover's own); SEED=3 (the world's seed)
set -uo pipefail
OUT="${OUT:-$PWD/bench-out}"
ROWS="${1:-2000000}"
MAX="${2:-2000}"
TOP="${3:-10}"
LIMIT="${4:-900}"
PREFIX="${ABACUS_GPU_PREFIX:-/tmp/abacus-gpu}"
mkdir -p "$OUT"
export PATH="$PREFIX/bin:$PATH"
SEED="${SEED:-3}"
W=/tmp/discover-world-$ROWS-$SEED
t0=$(date +%s)
[ -f "$W/ground_truth.json" ] || abacus sim --seed "$SEED" --rows "$ROWS" --derived-effects --out "$W" >/dev/null
echo "world: $(($(date +%s) - t0)) s"
LINE=disc$(date +%s)
abacus lines create "$LINE" >/dev/null
t1=$(date +%s)
abacus samples import "$W/samples/feed.parquet" --name feed --domain "$LINE" --label click --time ts \
  --keys impression_id,user_id,item_id,context_id,domain --json >"$OUT/discover-import.json"
echo "import: $(($(date +%s) - t1)) s"
FEATURES=$(python3 -c "import json,sys; g=json.load(open('$W/ground_truth.json')); print(','.join(f['name'] for f in g['features'] if 'feed' in f['inConfigOf']))")
t2=$(date +%s)
timeout "$LIMIT" abacus discover --domain "$LINE" --samples feed --features "$FEATURES" --max-candidates "$MAX" --top "$TOP" \
  ${WINDOWS:+--windows "$WINDOWS"} \
  --wait --json >"$OUT/discover-${ROWS}-${MAX}.json" 2>"$OUT/discover-progress.log"
echo "discover: rc $? after $(($(date +%s) - t2)) s"
psql -At -F ' | ' -c "SELECT t.seq, t.kind, t.status, t.backend,
    extract(epoch FROM (coalesce(t.finished_at, now()) - t.started_at))::int AS s, t.metrics->'timings', t.error
  FROM trials t WHERE t.experiment_id = (SELECT id FROM experiments ORDER BY created_at DESC LIMIT 1) ORDER BY t.seq" \
  | tee "$OUT/discover-trials.txt"
python3 - "$OUT/discover-${ROWS}-${MAX}.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d.get('result') or {}
print(d['status'], 'created', d['createdAt'], 'finished', d['finishedAt'])
print('candidates', r.get('candidates'), 'screen rows', r.get('screenRows'))
for c in r.get('chosen', []):
    print(' ', c['text'], round(c['screenGain'], 5), c['verdict'], c.get('gain') and round(c['gain']['delta'], 4))
PY
