#!/usr/bin/env bash
# device call 6 (carry .gpu/node.xz, .gpu-test, the two addons, libs/runtime/bench/dist): after the
# output layer's backward and the wide part lost their float atomics: two identical fits (FP32), the
# GPU project's tests (all, the stress under memcheck), and ctr26 on Zipf ids with the tables in host
# memory (walk and hit/miss split on the host's threads)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
( cd libs/runtime/bench/dist
  for v in 20000 2000 300; do
    /tmp/node run-bench.js --determinism --vocab $v > "$O/det-$v.json" 2> "$O/det-$v.err"; echo "det $v rc $? $(head -c 500 "$O/det-$v.json")"
  done )
timeout 330 bash scripts/gpu-vitest.sh run --reporter=verbose > "$O/gpu-vitest-all.txt" 2>&1
echo "vitest all rc $?"; grep -E "✓|✗|×|Test Files|Tests |AssertionError|expected|ERROR SUMMARY" "$O/gpu-vitest-all.txt" | head -40
cd libs/runtime/bench/dist
timeout 150 /tmp/node run-bench.js --hbm-budget 0.25 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/hbm-budget.json" 2> "$O/hbm-budget.err"
echo "bench rc $?"; head -c 2000 "$O/hbm-budget.json"; tail -3 "$O/hbm-budget.err"
