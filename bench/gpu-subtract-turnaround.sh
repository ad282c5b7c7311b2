#!/usr/bin/env bash
# On a GPU host (after `bash scripts/gpu-host.sh pack` on the build machine and .gpu/ brought along):
# the 1M x 40 subtract bench through the platform, first with the worker on cuda, then with the same
# worker on cpu (all cores of the host), same data and seed. GPU memory and the worker's RSS are
# sampled every second. Results go to $OUT (default ./bench-out).
#   [BACKENDS="cuda cpu"] bash bench/gpu-subtract-turnaround.sh [rows] [features] [concurrency of the cuda run]
set -uo pipefail
OUT="${OUT:-$PWD/bench-out}"
ROWS="${1:-1000000}"
FEATURES="${2:-40}"
CUDA_CONCURRENCY="${3:-1}"
PREFIX="${ABACUS_GPU_PREFIX:-/tmp/abacus-gpu}"
mkdir -p "$OUT"
export PATH="$PREFIX/bin:$PATH"

sample() { # label: GPU memory (MiB), GPU utilisation and the worker's RSS (KiB), every second
  while sleep 1; do
    printf '%s %s %s %s\n' "$1" "$(date +%s)" \
      "$(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader,nounits 2>/dev/null | head -n1 | tr -d ' ')" \
      "$(ps -o rss= -p "$(cat "$PREFIX/run/worker.pid" 2>/dev/null)" 2>/dev/null | tr -d ' ')"
  done >>"$OUT/samples.log"
}

run() { # backend concurrency
  local backend=$1 conc=$2 pid
  bash scripts/gpu-host.sh up >"$OUT/up-$backend.log" 2>&1 || { tail -n 20 "$OUT/up-$backend.log"; return 1; }
  grep -h 'backend' "$PREFIX/logs/worker.log" | tail -n 2
  sample "$backend" &
  pid=$!
  abacus bench experiment subtract --rows "$ROWS" --features "$FEATURES" --backend "$backend" --json \
    --out "$OUT/subtract-$backend-${ROWS}x$FEATURES-c$conc.json" >/dev/null 2>"$OUT/bench-$backend.err"
  echo "$backend: rc $?"
  kill "$pid"
  # the next run starts a fresh worker with its own backend
  for f in "$PREFIX"/run/worker.pid "$PREFIX"/run/worker-*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  sleep 3
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
lscpu | grep -E 'Model name|^CPU\(s\)'
case " ${BACKENDS:-cuda cpu} " in *" cuda "*) ABACUS_RUNTIME_BACKEND=cuda ABACUS_WORKER_CONCURRENCY=$CUDA_CONCURRENCY run cuda "$CUDA_CONCURRENCY" ;; esac
case " ${BACKENDS:-cuda cpu} " in *" cpu "*) ABACUS_RUNTIME_BACKEND=cpu ABACUS_WORKER_CONCURRENCY=1 run cpu 1 ;; esac
cp "$PREFIX/logs/worker.log" "$OUT/worker.log" 2>/dev/null
for f in "$OUT"/subtract-*.json; do
  node -e 'const d=require(process.argv[1]); console.log(process.argv[1].split("/").pop(), d.experimentMs, "ms", JSON.stringify(d.stages), "removable", d.result.removable)' "$f" 2>/dev/null \
    || "$PREFIX/bin/node" -e 'const d=require(process.argv[1]); console.log(process.argv[1].split("/").pop(), d.experimentMs, "ms", JSON.stringify(d.stages), "removable", d.result.removable)' "$f"
done
