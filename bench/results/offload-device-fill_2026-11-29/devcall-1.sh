#!/usr/bin/env bash
# device call 1 (carry .gpu/node.xz, .gpu-test, the two addons, libs/runtime/bench/dist): the cache
# fills on the device (walk, sort, clock and swap there; the next batch's fill while the step runs):
# the GPU project's host-memory test (parity, lanes, reload, the same offloaded fit twice), then
# ctr26 on Zipf(1.05) ids as on 2026-11-29 (--hbm-budget 0.25,0.1) and a cache that must evict (0.02)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L; nproc
timeout 240 bash scripts/gpu-vitest.sh run --reporter=verbose -t 'host memory' > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|passed|failed|Error|expected|AssertionError|maxPredDiff|repeat" "$O/gpu-vitest.txt" | head -40
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
ABACUS_CUDA_VERBOSE=1 timeout 280 /tmp/node run-bench.js --hbm-budget 0.25,0.1,0.02 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/hbm-budget.json" 2> "$O/hbm-budget.err"
echo "bench rc $?"; head -c 3000 "$O/hbm-budget.json"; grep -v 'epoch' "$O/hbm-budget.err" | tail -8; grep 'epoch' "$O/hbm-budget.err" | tail -12
