#!/usr/bin/env bash
# device call 4 (carry as call 1; NOTE: the runner's bundle still held call 1's addon, so calls 2-4's
# bench runs measured call 1's code, FIFO and zero-copy reads, again; their vitest runs the new one)
# meant: CLOCK's first lap clears the whole window when it takes warm slots;
# where a fill's time goes (ABACUS_CUDA_VERBOSE: the fill ends before the step is enqueued, so these
# runs' step times are not the pipeline's): one pass over 200 distinct batches, budgets 0.25 and 0.02;
# then call 1's bench at 0.02 without the profile
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L; nproc
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
ABACUS_CUDA_VERBOSE=1 timeout 200 /tmp/node run-bench.js --hbm-budget 0.25,0.02 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 100 --batches 200 > "$O/prof-200.json" 2> "$O/prof-200.err"
echo "bench rc $?"; head -c 2000 "$O/prof-200.json"; echo; grep 'epoch' "$O/prof-200.err" | tail -6
timeout 150 /tmp/node run-bench.js --hbm-budget 0.25,0.02 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/hbm-budget-40.json" 2> "$O/hbm-budget-40.err"
echo "bench rc $?"; head -c 3000 "$O/hbm-budget-40.json"; echo
