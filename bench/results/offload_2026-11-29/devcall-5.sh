#!/usr/bin/env bash
# device call 8 (same host, warm; carry .gpu): the calibration of call 7 resumed from its finished worlds
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
P=/tmp/abacus-gpu
export PATH=$P/bin:$PATH
cp bench/results/offload_2026-11-29/call7/cal-9001-cuda.jsonl "$O/cal-9001-cuda.jsonl"
ABACUS_WORKER_CONCURRENCY=8 ABACUS_RUNTIME_BACKEND=cuda bash scripts/gpu-host.sh up > "$O/up.log" 2>&1 || tail -5 "$O/up.log"
( cd "$O" && timeout 200 abacus bench calibration --worlds 100 --seed 9001 --rows 40000 --concurrency 6 --resume "$O/cal-9001-cuda.jsonl" --json --out "$O/cal-9001-cuda.json" > "$O/cal.log" 2>&1 ); echo "calibration rc $?"
echo "worlds finished: $(grep -c '' "$O/cal-9001-cuda.jsonl")"; tail -c 1500 "$O/cal.log"
