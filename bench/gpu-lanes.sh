#!/usr/bin/env bash
# On a GPU host (after `bash scripts/gpu-host.sh pack` on the build machine and .gpu/ brought along):
# the ROWS x FEATURES subtract bench through the platform once per configuration, each with a fresh
# worker on cuda, same data seed. A configuration is GPUS:LANES — the GPUs the worker sees
# (CUDA_VISIBLE_DEVICES = the first GPUS of the host) and ABACUS_GPU_LANES (models a trial trains at
# once on one GPU), optionally :LOOKAHEAD (ABACUS_PRUNE_LOOKAHEAD, default 0), :CONFIRM_AHEAD
# (ABACUS_CONFIRM_AHEAD, default auto = on) and :BUILD_THREADS (ABACUS_BUILD_THREADS, default 0). With
# 2+ GPUs `up` starts one worker per GPU (BORROW=1: one worker over all, its fits spilling onto the
# other GPUs with ABACUS_GPU_BORROW=true; see docs/operations/configuration.md for why that is off by default).
# GPU memory / use (every GPU) and the worker's RSS are sampled every second. Results go to $OUT
# (default ./bench-out). FRESH=1: every configuration starts from empty sample-build and model caches
# (the same world is simulated again for each, so without it the later ones reuse the first's build and
# its base and confirm models). FIRST_EPOCH=inOrder|shuffled: the model's training.firstEpoch.
#   bash bench/gpu-lanes.sh [rows] [features] [GPUS:LANES[:LOOKAHEAD[:CONFIRM_AHEAD[:BUILD_THREADS]]] ...]  (default 1:1 1:3 2:3)
set -uo pipefail
OUT="${OUT:-$PWD/bench-out}"
ROWS="${1:-1000000}"
FEATURES="${2:-40}"
shift 2 2>/dev/null || shift $#
CONFIGS=("$@")
[ "${#CONFIGS[@]}" -gt 0 ] || CONFIGS=(1:1 1:3 2:3)
PREFIX="${ABACUS_GPU_PREFIX:-/tmp/abacus-gpu}"
mkdir -p "$OUT"
export PATH="$PREFIX/bin:$PATH"

sample() { # label: per GPU memory (MiB) and utilisation, and the worker's RSS (KiB), every second
  while sleep 1; do
    printf '%s %s %s %s\n' "$1" "$(date +%s)" \
      "$(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader,nounits 2>/dev/null | tr -d ' ' | paste -sd' ')" \
      "$(ps -o rss= -p "$(cat "$PREFIX/run/worker.pid" 2>/dev/null)" 2>/dev/null | tr -d ' ')"
  done >>"$OUT/lanes-samples.log"
}

nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
lscpu | grep -E 'Model name|^CPU\(s\)'
for c in "${CONFIGS[@]}"; do
  IFS=: read -r gpus lanes lookahead confirm build <<<"$c"
  export ABACUS_PRUNE_LOOKAHEAD=${lookahead:-0} ABACUS_CONFIRM_AHEAD=${confirm:-auto} ABACUS_BUILD_THREADS=${build:-0}
  visible=$(seq -s, 0 $((gpus - 1)))
  label="g${gpus}-l${lanes}-a${ABACUS_PRUNE_LOOKAHEAD}-c${ABACUS_CONFIRM_AHEAD}-b${ABACUS_BUILD_THREADS}"
  if [ "${BORROW:-0}" = 1 ] && [ "$gpus" -gt 1 ]; then
    # one worker over every GPU
    CUDA_VISIBLE_DEVICES=$visible ABACUS_GPU_LANES=$lanes ABACUS_GPU_BORROW=true ABACUS_RUNTIME_BACKEND=cuda \
      ABACUS_WORKER_CONCURRENCY=$((gpus + 1)) ABACUS_GPU_WORKERS=one bash scripts/gpu-host.sh up \
      >"$OUT/up-$label.log" 2>&1 || { tail -n 20 "$OUT/up-$label.log"; continue; }
  else
    CUDA_VISIBLE_DEVICES=$visible ABACUS_GPU_LANES=$lanes ABACUS_RUNTIME_BACKEND=cuda ABACUS_WORKER_CONCURRENCY=2 \
      bash scripts/gpu-host.sh up >"$OUT/up-$label.log" 2>&1 || { tail -n 20 "$OUT/up-$label.log"; continue; }
  fi
  if [ "${FRESH:-0}" = 1 ]; then
    for d in "$PREFIX"/data "$PREFIX"/host-*; do [ -d "$d" ] && rm -rf "$d/built" "$d/models"; done
  fi
  sample "$label" &
  pid=$!
  abacus bench experiment subtract --rows "$ROWS" --features "$FEATURES" --backend cuda --json \
    ${FIRST_EPOCH:+--first-epoch "$FIRST_EPOCH"} \
    --out "$OUT/subtract-cuda-${ROWS}x$FEATURES-$label${FIRST_EPOCH:+-$FIRST_EPOCH}-$(date +%H%M%S).json" >/dev/null 2>"$OUT/bench-$label.err"
  echo "$label: rc $?"
  kill "$pid"
  # the next configuration starts a fresh worker
  for f in "$PREFIX"/run/worker.pid "$PREFIX"/run/worker-*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  sleep 3
done
cp "$PREFIX/logs/worker.log" "$OUT/worker.log" 2>/dev/null
for f in "$OUT"/subtract-cuda-*.json; do
  "$PREFIX/bin/node" -e 'const d=require(process.argv[1]); console.log(process.argv[1].split("/").pop(), d.experimentMs, "ms", JSON.stringify(d.stages), JSON.stringify(d.trials.map((t)=>[t.kind,t.ms])), "removable", d.result.removable, "prune", JSON.stringify(d.prune && d.prune.timings))' "$f"
done
