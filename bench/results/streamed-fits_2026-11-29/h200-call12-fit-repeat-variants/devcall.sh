#!/usr/bin/env bash
# device call 12 (carry .gpu/node.xz and libs/runtime/bench/dist): run-bench --fit-repeat on cuda under
# variants of the runtime's settings, to find which part makes two identical fits differ
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
run() { echo -n "$1: "; env "${@:2}" /tmp/node run-bench.js --fit-repeat --backend cuda 2>>"$O/fit-repeat.err" | tee -a "$O/fit-repeat-$1.json" | grep -o '"fitRepeat":{[^}]*}'; }
run default X=1
run fp32 ABACUS_CUDA_MATH=fp32
run no-graph ABACUS_CUDA_NO_GRAPH=1
run no-epilogue ABACUS_CUDA_NO_EPILOGUE=1
run sparse-atomic ABACUS_CUDA_SPARSE=atomic
run no-leads ABACUS_CUDA_SPARSE_LEADS=0
run fp32-no-leads ABACUS_CUDA_MATH=fp32 ABACUS_CUDA_SPARSE_LEADS=0
