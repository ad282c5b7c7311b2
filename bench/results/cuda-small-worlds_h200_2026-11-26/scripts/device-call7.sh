#!/usr/bin/env bash
# A/B under contention: the parity suite while a stress process loads the same GPU, with the addon
# before the legacy-stream fix (prefix) and after it (new); then the gpu vitest project (files in parallel)
set -u
[ -x /tmp/node ] || { xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node; }
export PATH=/tmp:$PATH
D=$PWD/libs/runtime/bench/dist
mkdir -p /tmp/k7
for v in prefix new; do
  a=$PWD/.gpu-test/prefix/abacus_runtime_cuda.node; [ $v = new ] && a=$D/abacus_runtime_cuda.node
  node $D/run-bench.js --stress --cases 400 --lanes 3 --seed 900 --cuda-addon $a > /dev/null 2> /tmp/k7/hog-$v.log &
  hog=$!
  for r in 1 2; do
    timeout 100 node $D/run-bench.js --parity --cuda-addon $a > /tmp/k7/parity-$v-$r.json 2> /tmp/k7/parity-$v-$r.log
    echo "== parity $v run $r (GPU shared with a stress process): $(grep -c ^PASS /tmp/k7/parity-$v-$r.log) pass, $(grep -c ^FAIL /tmp/k7/parity-$v-$r.log) fail"
    grep ^FAIL /tmp/k7/parity-$v-$r.log | cut -c1-250 | head -4
  done
  kill $hog 2>/dev/null; wait $hog 2>/dev/null
done
timeout 200 bash scripts/gpu-vitest.sh run > /tmp/k7/vitest-gpu.log 2>&1; echo "vitest gpu rc $?"
grep -E "✓|✗|×|Test Files|Tests " /tmp/k7/vitest-gpu.log | tail -8
grep -E "^FAIL" /tmp/k7/vitest-gpu.log | head -5 | cut -c1-300
tar -czf $OUT/k7.tgz -C /tmp k7
