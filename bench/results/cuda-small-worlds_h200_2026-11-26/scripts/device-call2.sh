#!/usr/bin/env bash
# after the fix: the stress runs of call 1, the sanitizers, then the gpu vitest project
set -u
xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH:/usr/local/cuda/bin
D=$PWD/libs/runtime/bench/dist
date -u | tee $OUT/date.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
run() { # name timeout args...
  local name=$1 t=$2; shift 2
  local t0=$(date +%s)
  timeout $t "$@" > $OUT/$name.json 2> $OUT/$name.log; local rc=$?
  echo "== $name rc $rc $(( $(date +%s) - t0 )) s: $(grep -c '^PASS' $OUT/$name.log) pass, $(grep -c '^FAIL' $OUT/$name.log) fail; sanitizer: $(grep -h 'ERROR SUMMARY' $OUT/$name.json | head -1)"
  grep '^FAIL' $OUT/$name.log | head -5 | cut -c1-300
}
run stress-l3 150 node $D/run-bench.js --stress --cases 60 --lanes 3 --seed 1
run stress-l1 120 node $D/run-bench.js --stress --cases 40 --lanes 1 --seed 1
run stress-l3-seed500 150 node $D/run-bench.js --stress --cases 60 --lanes 3 --seed 500
for tool in memcheck synccheck; do
  run $tool-l2 200 compute-sanitizer --tool $tool --print-limit 20 node $D/run-bench.js --stress --cases 12 --lanes 2 --seed 1 --max-rows 6000
done
for tool in racecheck initcheck; do
  run $tool-l1 150 compute-sanitizer --tool $tool --print-limit 20 node $D/run-bench.js --stress --cases 4 --lanes 1 --seed 1 --max-rows 3000
done
for f in $OUT/*check*.json; do echo "-- $f"; grep "Program hit\|Invalid\|Race\|Uninitialized\|Barrier" $f | sort | uniq -c | head -8; done
timeout 420 bash scripts/gpu-vitest.sh run > $OUT/vitest-gpu.log 2>&1; echo "vitest gpu rc $?"
grep -E "✓|✗|×|FAIL|Tests|passed|failed" $OUT/vitest-gpu.log | tail -25
