#!/usr/bin/env bash
# device call 3 (carry as call 1): the rows read in gathered on the host into pinned memory and copied
# in one transfer (zero-copy reads before); CLOCK over a window four times the slots needed; the
# host-memory test, call 1's bench (40 batches repeated), then one pass over 200 distinct batches
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L; nproc
timeout 200 bash scripts/gpu-vitest.sh run --reporter=verbose -t 'host memory' > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|passed|failed|Error|expected|AssertionError" "$O/gpu-vitest.txt" | head -20
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
ABACUS_CUDA_VERBOSE=1 timeout 150 /tmp/node run-bench.js --hbm-budget 0.25,0.1,0.02 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/hbm-budget-40.json" 2> "$O/hbm-budget-40.err"
echo "bench rc $?"; head -c 3000 "$O/hbm-budget-40.json"; echo
ABACUS_CUDA_VERBOSE=1 timeout 250 /tmp/node run-bench.js --hbm-budget 0.25,0.1,0.02 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 190 --batches 200 > "$O/hbm-budget-200.json" 2> "$O/hbm-budget-200.err"
echo "bench rc $?"; head -c 3000 "$O/hbm-budget-200.json"; echo; grep 'epoch' "$O/hbm-budget-200.err" | tail -12
