#!/usr/bin/env bash
# device call 4 (carry .gpu/node.xz, .gpu-test, the two addons, libs/runtime/bench/dist): the GPU
# project's tests of the embedding tables in host memory and of the device metrics (verbose); then
# ctr26 on Zipf(1.05) ids with the tables in host memory under a quarter of their size against on
# the device (--hbm-budget)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
timeout 300 bash scripts/gpu-vitest.sh run --reporter=verbose -t 'host memory|metrics computed on the device' > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|passed|failed|Error|expected|AssertionError" "$O/gpu-vitest.txt" | head -30
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
timeout 240 /tmp/node run-bench.js --hbm-budget 0.25,0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/hbm-budget.json" 2> "$O/hbm-budget.err"
echo "bench rc $?"; head -c 3000 "$O/hbm-budget.json"; tail -5 "$O/hbm-budget.err"
cd "$OLDPWD"
# the whole GPU project (CPU<->CUDA parity, stress, fault, in place, ...; the stress again under memcheck)
timeout 280 bash scripts/gpu-vitest.sh run > "$O/gpu-vitest-all.txt" 2>&1
echo "vitest all rc $?"; grep -E "Test Files|Tests |✗|×|FAIL|ERROR SUMMARY" "$O/gpu-vitest-all.txt" | head -20
