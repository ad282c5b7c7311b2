#!/usr/bin/env bash
# device call 12 (one H200): write-backs staged (the swap kernel stages each victim's row; the next fill
# or flush copies them back in one transfer and the host's threads write them to host memory before any
# row is read from it) instead of zero-copy writes. The host-memory test; one pass at a quarter and a tenth
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L; nproc
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
ABACUS_GPU_MEMCHECK=0 timeout 120 bash scripts/gpu-vitest.sh run -t 'host memory' > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|FAIL|Test Files|Tests |AssertionError|expected" "$O/gpu-vitest.txt" | head -10
cd libs/runtime/bench/dist
timeout 100 /tmp/node --expose-gc run-bench.js --hbm-budget 0.25,0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 190 --batches 200 > "$O/hbm-budget-200.json" 2> "$O/hbm-budget-200.err"
echo "bench rc $?"; head -c 2500 "$O/hbm-budget-200.json"; echo
