#!/usr/bin/env bash
# device call 7 (one H200): the walk counts each part's misses and hits in the block's shared memory
# first (call 6: per-table parts cost 0.1 ms a step in epochs, one global atomic an id). The host-memory
# test; one cache against a part a table of the same size, epochs and one pass, twice
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L; nproc
[ -x /tmp/node ] || { xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node; }
ABACUS_GPU_MEMCHECK=0 timeout 200 bash scripts/gpu-vitest.sh run -t 'host memory' > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|FAIL|Test Files|Tests |AssertionError|expected" "$O/gpu-vitest.txt" | head -10
cd libs/runtime/bench/dist
for k in 1 2; do
  timeout 100 /tmp/node --expose-gc run-bench.js --hbm-budget 0.25,0.1 --load-factors 0.25,0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/split-40-$k.json" 2> "$O/split-40-$k.err"
  echo "bench rc $?"; head -c 3500 "$O/split-40-$k.json"; echo
done
timeout 150 /tmp/node --expose-gc run-bench.js --hbm-budget 0.25 --load-factors 0.25 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 190 --batches 200 > "$O/split-200.json" 2> "$O/split-200.err"
echo "bench rc $?"; head -c 2500 "$O/split-200.json"; echo
