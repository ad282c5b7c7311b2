#!/usr/bin/env bash
# device call 10 (one H200): training streamed from shards (windows held on the device) with the tables
# offloaded fills the next batch while the step runs, once its places and windows are there. The
# host-memory test (its streamed-from-shards cases take that path); then the bench streamed from four
# shards: the GPU tables streamed against offloaded tables streamed, one pass and epochs
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L; nproc
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
ABACUS_GPU_MEMCHECK=0 timeout 200 bash scripts/gpu-vitest.sh run -t 'host memory' > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|FAIL|Test Files|Tests |AssertionError|expected" "$O/gpu-vitest.txt" | head -10
grep -A3 '"streamedShards' "$O/gpu-vitest.txt" | grep maxPredDiff | tr -d ' ' | sort | uniq -c
cd libs/runtime/bench/dist
timeout 170 /tmp/node --expose-gc run-bench.js --streamed --hbm-budget 0.25 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 190 --batches 200 > "$O/streamed-200.json" 2> "$O/streamed-200.err"
echo "bench rc $?"; head -c 2500 "$O/streamed-200.json"; echo; tail -3 "$O/streamed-200.err"
timeout 100 /tmp/node --expose-gc run-bench.js --streamed --hbm-budget 0.25 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/streamed-40.json" 2> "$O/streamed-40.err"
echo "bench rc $?"; head -c 2500 "$O/streamed-40.json"; echo; tail -3 "$O/streamed-40.err"
