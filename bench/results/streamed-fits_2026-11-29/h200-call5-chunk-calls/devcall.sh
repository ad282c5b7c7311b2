#!/usr/bin/env bash
# device call 5 (carry .gpu/node.xz and libs/runtime/bench/dist): one epoch as one train call against
# one call per 65,536-row chunk, from shards and from memory, at the 1M x 40 subtract's fitted shape,
# each call's setup; ABACUS_CUDA_VERBOSE for what the setup did
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
ABACUS_CUDA_VERBOSE=1 /tmp/node run-bench.js --chunk-calls --backend cuda > "$O/chunk-calls.json" 2> "$O/chunk-calls.err"
echo "rc $?"; grep -v "^\[abacus-cuda\] training step captured" "$O/chunk-calls.err" | tail -40
