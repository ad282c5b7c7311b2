#!/usr/bin/env bash
# stress the CUDA runtime: random small shapes, several models at once, gc; then under compute-sanitizer
set -u
xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH
D=$PWD/libs/runtime/bench/dist
date -u | tee $OUT/date.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/gpu.txt
which compute-sanitizer || ls /usr/local/cuda/bin | head
export PATH=$PATH:/usr/local/cuda/bin
run() { # name timeout args...
  local name=$1 t=$2; shift 2
  local t0=$(date +%s)
  timeout $t "$@" > $OUT/$name.json 2> $OUT/$name.log; local rc=$?
  echo "== $name rc $rc $(( $(date +%s) - t0 )) s: $(grep -c '^PASS' $OUT/$name.log) pass, $(grep -c '^FAIL' $OUT/$name.log) fail"
  grep '^FAIL' $OUT/$name.log | head -5 | cut -c1-400
}
run stress-l3 150 node --expose-gc $D/run-bench.js --stress --cases 60 --lanes 3 --seed 1
run stress-l1 120 node --expose-gc $D/run-bench.js --stress --cases 40 --lanes 1 --seed 1
ABACUS_CUDA_NO_GRAPH=1 run stress-nograph-l3 120 node --expose-gc $D/run-bench.js --stress --cases 60 --lanes 3 --seed 1
run memcheck-l1 150 compute-sanitizer --tool memcheck --print-limit 30 node --expose-gc $D/run-bench.js --stress --cases 12 --lanes 1 --seed 1 --max-rows 6000
grep -m5 -B2 -A25 "Invalid\|ERROR SUMMARY" $OUT/memcheck-l1.log | head -120
