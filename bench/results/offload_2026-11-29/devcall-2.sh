#!/usr/bin/env bash
# device call 5 (carry .gpu/node.xz, libs/runtime/bench/dist): are two identical cuda fits (FP32) the
# same? The step where their losses first differ, per setting (each in its own process)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
run() { local label=$1; shift; env "$@" /tmp/node run-bench.js --determinism $ARGS > "$O/det-$label.json" 2> "$O/det-$label.err"; echo "$label rc $? $(cat "$O/det-$label.json" | head -c 600)"; }
ARGS="--vocab 20000"
run default X=1
run leads0 ABACUS_CUDA_SPARSE_LEADS=0
run nograph ABACUS_CUDA_NO_GRAPH=1
run atomic ABACUS_CUDA_SPARSE=atomic
run leads0-nograph ABACUS_CUDA_SPARSE_LEADS=0 ABACUS_CUDA_NO_GRAPH=1
ARGS="--vocab 300"
run vocab300 X=1
ARGS="--vocab 2000"
run vocab2000 X=1
