#!/usr/bin/env bash
# On a GPU host (after `bash scripts/gpu-host.sh pack` on the build machine and .gpu/ brought along):
# a real sticky GPU fault in one trial. The worker is restarted with ABACUS_DEBUG_DEVICE_FAULT=train:
# the first `train` trial begins with a kernel that traps, which loses the worker's CUDA context.
# Expected: that trial's attempt fails as a device fault, the worker exits 75, gpu-host.sh's
# supervisor starts it again, the trial runs again on the fresh process and the experiment succeeds;
# a second experiment right after runs with no retry. Experiments are `abacus bench experiment
# subtract` worlds (ROWS x FEATURES). Results (experiments' JSON, the worker log) go to $OUT.
#   bash bench/gpu-fault-recovery.sh [rows] [features]
set -uo pipefail
OUT="${OUT:-$PWD/bench-out}"
ROWS="${1:-60000}"
FEATURES="${2:-20}"
PREFIX="${ABACUS_GPU_PREFIX:-/tmp/abacus-gpu}"
mkdir -p "$OUT"
export PATH="$PREFIX/bin:$PATH"
for f in "$PREFIX"/run/worker.pid "$PREFIX"/run/worker-*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
sleep 3
rm -f "$PREFIX/data/.debug-device-fault-injected"
ABACUS_DEBUG_DEVICE_FAULT=train ABACUS_RUNTIME_BACKEND=cuda bash scripts/gpu-host.sh up >"$OUT/up-fault.log" 2>&1 || { tail -n 20 "$OUT/up-fault.log"; exit 1; }
log="$PREFIX/logs/worker.log"
from=$(wc -l <"$log")
for seed in 21 22; do
  t0=$(date +%s)
  abacus bench experiment subtract --rows "$ROWS" --features "$FEATURES" --backend cuda --seed "$seed" --json \
    --out "$OUT/fault-recovery-seed$seed.json" >/dev/null 2>"$OUT/fault-recovery-seed$seed.err"
  echo "experiment seed $seed: rc $?, $(($(date +%s) - t0)) s"
done
tail -n +"$from" "$log" >"$OUT/fault-recovery-worker.log"
sed 's/\x1b\[[0-9;]*m//g' "$OUT/fault-recovery-worker.log" | grep -E 'fault injection|GPU fault|exiting \(75\)|exited with status|device fault|started train \(attempt 2\)|worker up' | cut -c1-400
for seed in 21 22; do
  "$PREFIX/bin/node" -e '
    const d = require(process.argv[1]);
    const id = d.experimentId;
    console.log(`seed ${process.argv[2]}: experiment ${id} ${d.experimentMs} ms, trials [kind, attempts]: ` +
      JSON.stringify(d.trials.map((t) => [t.kind, t.attempts])));' "$OUT/fault-recovery-seed$seed.json" "$seed" 2>&1 | cut -c1-600
done
# back to a worker without fault injection
for f in "$PREFIX"/run/worker.pid "$PREFIX"/run/worker-*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
sleep 3
ABACUS_RUNTIME_BACKEND=cuda bash scripts/gpu-host.sh up >>"$OUT/up-fault.log" 2>&1
