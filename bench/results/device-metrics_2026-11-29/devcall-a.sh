#!/usr/bin/env bash
# device call 2 (carry .gpu/node.xz, .gpu-test, the two addons, libs/runtime/bench/dist): the GPU test
# project's device-metrics, in-place and repeated-fit tests; then the prune's work at the 1M x 40
# model's shape (`--prune-shape`, 13 checks x 3 warm fits, 3 lanes) with the warm checks' metrics on
# the host and on the device, alternated, twice each
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
timeout 300 bash scripts/gpu-vitest.sh run -t 'metrics computed on the device|fine-tunes in place|fits repeated' > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|passed|failed|Error|expected" "$O/gpu-vitest.txt" | head -30
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
SHAPE="--numeric 27 --slots 13 --slot-max-len 1,1,1,1,1,1,1,1,1,8,10,5,5 --slot-vocab 3,5,24,50,200,1000,5000,20000,100000,2000,2000,2000,2000"
for r in 1 2; do
  for w in host device; do
    ABACUS_CUDA_EVAL_METRICS=$w /tmp/node run-bench.js --prune-shape --backend cuda --rows 600000 --lanes 3 --estimates 0 $SHAPE > "$O/prune-shape-$w-$r.json" 2> "$O/prune-shape-$w-$r.err"
    echo "$w $r rc $?"; /tmp/node -e 'const d=require(process.argv[1]).pruneShape; console.log(JSON.stringify(d.checks))' "$O/prune-shape-$w-$r.json"
  done
done
