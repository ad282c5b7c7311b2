#!/usr/bin/env bash
# device call 6 (one H200): per-table load factors (a part of the cache for each table, each with its
# own clock; a part holding its whole table keeps its rows at their own slots) and shared embeddings
# put into offloaded tables: the whole GPU project with the host-memory test's new cases and memcheck;
# then one cache against a part a table of the same size (a quarter of the rows), one pass and epochs
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L; nproc
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
timeout 400 bash scripts/gpu-vitest.sh run > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|FAIL|Test Files|Tests |ERROR SUMMARY|AssertionError|expected" "$O/gpu-vitest.txt" | head -30
cd libs/runtime/bench/dist
timeout 150 /tmp/node --expose-gc run-bench.js --hbm-budget 0.25 --load-factors 0.25 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 190 --batches 200 > "$O/split-200.json" 2> "$O/split-200.err"
echo "bench rc $?"; head -c 2500 "$O/split-200.json"; echo
timeout 100 /tmp/node --expose-gc run-bench.js --hbm-budget 0.25,0.1 --load-factors 0.25,0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/split-40.json" 2> "$O/split-40.err"
echo "bench rc $?"; head -c 3500 "$O/split-40.json"; echo
