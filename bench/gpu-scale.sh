#!/usr/bin/env bash
# On a GPU host with the platform up (bash scripts/gpu-host.sh up): one subtract on ROWS x FEATURES
# (default 10M x 100) through the platform for at most LIMIT seconds (default 500), then what each
# trial did: status, time, its own timings and progress, from the database; every GPU's memory and use
# and every worker's RSS every second. Results go to $OUT (default ./bench-out).
#   bash bench/gpu-scale.sh [rows] [features] [limit seconds]
# REGISTER_AT=<dir>: the samples are written there as day=N/ partitions and registered by reference
# (file://) instead of uploaded. FIRST_EPOCH=inOrder|shuffled: the model's training.firstEpoch.
set -uo pipefail
OUT="${OUT:-$PWD/bench-out}"
ROWS="${1:-10000000}"
FEATURES="${2:-100}"
LIMIT="${3:-500}"
PREFIX="${ABACUS_GPU_PREFIX:-/tmp/abacus-gpu}"
mkdir -p "$OUT"
export PATH="$PREFIX/bin:$PATH"
free -g | head -n 2
# A process and all its descendants: a worker runs under a supervisor loop (its pid in the pid file),
# the Node process is its child. Prints "RSS,anonymous RSS" of them all (KiB; the rest of the RSS is
# file-backed: mapped shards and libraries).
tree_mem() {
  local all=$1 frontier=$1 next
  while [ -n "$frontier" ]; do
    next=$(for p in $frontier; do ps -o pid= --ppid "$p" 2>/dev/null; done | tr -s ' \n' ' ')
    all="$all $next"
    frontier=$(echo $next)
  done
  for p in $all; do grep -h '^Rss' "/proc/$p/status" 2>/dev/null; done |
    awk '{ if ($1 == "RssAnon:") a += $2; s += $2 } END { printf "%d,%d\n", s, a }'
}
# every GPU (memory MiB,utilisation per GPU, space-separated), every worker's RSS and its anonymous part
# (KiB, comma-separated):
# with one worker per GPU the experiment's trials run on whichever pair takes them
(while sleep 1; do
  mem=$(for f in "$PREFIX"/run/worker.pid "$PREFIX"/run/worker-*.pid; do [ -e "$f" ] && tree_mem "$(cat "$f")"; done)
  printf '%s %s %s %s %s\n' scale "$(date +%s)" \
    "$(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader,nounits 2>/dev/null | tr -d ' ' | paste -sd';')" \
    "$(echo "$mem" | cut -d, -f1 | paste -sd,)" "$(echo "$mem" | cut -d, -f2 | paste -sd,)"
done >>"$OUT/scale-samples.log") &
sampler=$!
start=$(date +%s)
timeout "$LIMIT" abacus bench experiment subtract --rows "$ROWS" --features "$FEATURES" --backend cuda --json \
  ${REGISTER_AT:+--register-at "$REGISTER_AT"} ${FIRST_EPOCH:+--first-epoch "$FIRST_EPOCH"} \
  --out "$OUT/scale-subtract-${ROWS}x$FEATURES${FIRST_EPOCH:+-$FIRST_EPOCH}.json" >/dev/null 2>"$OUT/scale-bench.err"
echo "bench: rc $? after $(($(date +%s) - start)) s"
kill "$sampler"
# the kernel's high-water mark of each worker process's RSS since it started (VmHWM): the true peak,
# which the samples every second can miss (a copy of rows that maps many pages for a moment)
for f in "$PREFIX"/run/worker.pid "$PREFIX"/run/worker-*.pid; do
  [ -e "$f" ] || continue
  for p in $(cat "$f") $(ps -o pid= --ppid "$(cat "$f")" 2>/dev/null); do
    awk -v p="$p" -v w="$(basename "$f" .pid)" '/^VmHWM:/ { printf "%s pid %s: peak RSS since start (VmHWM) %.2f GiB\n", w, p, $2 / 1048576 }' "/proc/$p/status" 2>/dev/null
  done
done | tee "$OUT/scale-vmhwm.txt"
tail -n 5 "$OUT/scale-bench.err"
psql -At -c "SELECT e.name, e.status, e.progress_message, e.created_at FROM experiments e ORDER BY e.created_at DESC LIMIT 1"
psql -At -F ' | ' -c "SELECT t.seq, t.kind, t.status, t.attempts, t.backend, round(t.progress::numeric, 3),
    extract(epoch FROM (coalesce(t.finished_at, now()) - t.started_at))::int AS s, t.metrics->'timings', t.error
  FROM trials t WHERE t.experiment_id = (SELECT id FROM experiments ORDER BY created_at DESC LIMIT 1) ORDER BY t.seq" \
  | tee "$OUT/scale-trials.txt"
psql -At -c "SELECT t.metrics->>'epochs', t.metrics->>'steps', t.metrics->>'trainMs', t.metrics->>'fitRows', t.metrics->>'testRows'
  FROM trials t WHERE t.kind = 'train' AND t.status = 'succeeded' ORDER BY t.finished_at DESC LIMIT 1"
grep -hE 'built|samples|error|Error' "$PREFIX/logs/worker.log" | tail -n 8
awk '{ n = split($3, gs, ";"); for (i = 1; i <= n; i++) { split(gs[i], g, ","); if (g[1] > m) m = g[1] }
       k = split($4, rs, ","); for (i = 1; i <= k; i++) if (rs[i] > r) r = rs[i]
       k = split($5, as, ","); for (i = 1; i <= k; i++) if (as[i] > a) a = as[i] }
     END { print "max GPU memory MiB (any GPU)", m, "max worker RSS GiB (any worker)", r / 1048576, "of it anonymous at most", a / 1048576 }' "$OUT/scale-samples.log"
# peak worker RSS while each trial ran (its start..end in the database against the samples' seconds;
# IV runs beside the build, so their windows overlap)
psql -At -F ' ' -c "SELECT t.seq, t.kind, coalesce(t.metrics->>'role', ''), extract(epoch FROM t.started_at)::bigint,
    extract(epoch FROM coalesce(t.finished_at, now()))::bigint
  FROM trials t WHERE t.experiment_id = (SELECT id FROM experiments ORDER BY created_at DESC LIMIT 1) AND t.started_at IS NOT NULL
  ORDER BY t.seq" >"$OUT/scale-trial-windows.txt"
awk 'NR == FNR { seq[NR] = $1; kind[NR] = $2 (NF == 5 ? "/" $3 : ""); from[NR] = $(NF - 1); to[NR] = $NF; n = NR; next }
     { k = split($4, rs, ","); r = 0; for (i = 1; i <= k; i++) if (rs[i] > r) r = rs[i]
       k = split($5, as, ","); a = 0; for (i = 1; i <= k; i++) if (as[i] > a) a = as[i]
       for (j = 1; j <= n; j++) if ($2 >= from[j] && $2 <= to[j]) { if (r > peak[j]) peak[j] = r; if (a > anon[j]) anon[j] = a } }
     END { for (j = 1; j <= n; j++) printf "trial %s %s: %d s, worker RSS peak %.2f GiB (anonymous peak %.2f GiB)\n", seq[j], kind[j], to[j] - from[j], peak[j] / 1048576, anon[j] / 1048576 }' \
  "$OUT/scale-trial-windows.txt" "$OUT/scale-samples.log" | tee "$OUT/scale-rss-by-trial.txt"
