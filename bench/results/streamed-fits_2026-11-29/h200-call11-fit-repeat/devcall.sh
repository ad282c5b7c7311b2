#!/usr/bin/env bash
# device call 11 (carry .gpu/node.xz and libs/runtime/bench/dist): the in-place parity's fine-tune
# repeated each way on cuda (node run-bench.js --fit-repeat), three times as it is and once with
# CUDA_LAUNCH_BLOCKING=1: does a fit differ from run to run, or only one way from the other?
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
for k in 1 2 3; do /tmp/node run-bench.js --fit-repeat --backend cuda 2>>"$O/fit-repeat.err" | tee -a "$O/fit-repeat.jsonl"; done
CUDA_LAUNCH_BLOCKING=1 /tmp/node run-bench.js --fit-repeat --backend cuda 2>>"$O/fit-repeat.err" | tee -a "$O/fit-repeat.jsonl"
