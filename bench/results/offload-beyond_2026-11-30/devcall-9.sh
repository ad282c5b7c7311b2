#!/usr/bin/env bash
# device call 9 (one H200): training streamed from the host with the tables offloaded (a fill before
# each streamed step); the whole GPU project (the host-memory test now also trains streamed, from
# memory and from shards, against the device tables), without the memcheck pass
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L; nproc
ABACUS_GPU_MEMCHECK=0 timeout 400 bash scripts/gpu-vitest.sh run > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|FAIL|Test Files|Tests |AssertionError|expected|Error" "$O/gpu-vitest.txt" | head -30
grep -o '"streamed[A-Za-z]*": {[^}]*}' "$O/gpu-vitest.txt" | head -20
