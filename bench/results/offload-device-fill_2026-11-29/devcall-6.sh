#!/usr/bin/env bash
# device call 6 (carry as call 1): the rows read in gathered with prefetching, in chunks of 16384 rows
# each copied in while the next is gathered; the bench's step time is the epochs' (the call less its
# setup and validation). One pass over 200 distinct batches (0.25, 0.1), the fill profile at 0.25,
# call 1's bench (40 batches repeated), the host-memory test
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L; nproc
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
timeout 200 /tmp/node run-bench.js --hbm-budget 0.25,0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 190 --batches 200 > "$O/hbm-budget-200.json" 2> "$O/hbm-budget-200.err"
echo "bench rc $?"; head -c 3000 "$O/hbm-budget-200.json"; echo
ABACUS_CUDA_VERBOSE=1 timeout 150 /tmp/node run-bench.js --hbm-budget 0.25 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 100 --batches 200 > "$O/prof-200.json" 2> "$O/prof-200.err"
echo "bench rc $?"; grep 'epoch' "$O/prof-200.err" | tail -3
timeout 120 /tmp/node run-bench.js --hbm-budget 0.25,0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/hbm-budget-40.json" 2> "$O/hbm-budget-40.err"
echo "bench rc $?"; head -c 3000 "$O/hbm-budget-40.json"; echo
cd "$OLDPWD"
timeout 120 bash scripts/gpu-vitest.sh run --reporter=verbose -t 'host memory' > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|passed|failed|Error|expected|AssertionError" "$O/gpu-vitest.txt" | head -20
