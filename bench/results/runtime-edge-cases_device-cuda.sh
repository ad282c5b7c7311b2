#!/usr/bin/env bash
# One device call (GPU host): the runtime's edge cases on the CUDA backend (and the CPU backend of the
# same bundle) — models without numeric inputs or slots (empty parameter tensors across N-API), a
# diverged model (NaN predictions in the AUC) — then the CUDA/CPU parity suite.
# Carry: .gpu (node.xz) and libs/runtime/bench/dist (bash scripts/build-cuda.sh && bash libs/runtime/bench/build-runner.sh).
set -u
xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH
D=$PWD/libs/runtime/bench/dist
date -u | tee $OUT/date.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 120 node $D/run-bench.js --edge-cases --backend cuda > $OUT/edge-cases-cuda.json 2> $OUT/edge-cases-cuda.log; echo "edge cuda rc $?"; cat $OUT/edge-cases-cuda.log | cut -c1-300
timeout 120 node $D/run-bench.js --edge-cases --backend cpu > $OUT/edge-cases-cpu.json 2> $OUT/edge-cases-cpu.log; echo "edge cpu rc $?"; cat $OUT/edge-cases-cpu.log | cut -c1-300
ABACUS_CPU_EVAL_PRECISION=fp32 timeout 300 node $D/run-bench.js --parity > $OUT/parity.json 2> $OUT/parity.log; echo "parity rc $?"; grep -c PASS $OUT/parity.log; grep "FAIL" $OUT/parity.log | cut -c1-300
