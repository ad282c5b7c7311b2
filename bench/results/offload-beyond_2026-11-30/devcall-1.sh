#!/usr/bin/env bash
# device call 1 (one H200): the gather reworked (one dispatch of the host's threads, the calling
# thread copying each chunk in as it is done; a fresh row's state not staged: only its weights cross),
# the fill stream at the GPU's highest priority. The host-memory test (its restore-best case and the
# flush's eviction kernel run for the first time), one pass over 200 batches (0.25, 0.1) and its
# profile, 40 batches repeated, and a small run of the beyond-the-card bench (tables forced to host).
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L; nproc; free -g | head -2
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
timeout 240 bash scripts/gpu-vitest.sh run --reporter=verbose -t 'host memory' > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|passed|failed|Error|expected|AssertionError" "$O/gpu-vitest.txt" | head -20
cd libs/runtime/bench/dist
timeout 200 /tmp/node run-bench.js --hbm-budget 0.25,0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 190 --batches 200 > "$O/hbm-budget-200.json" 2> "$O/hbm-budget-200.err"
echo "bench rc $?"; head -c 2500 "$O/hbm-budget-200.json"; echo
ABACUS_CUDA_VERBOSE=1 timeout 150 /tmp/node run-bench.js --hbm-budget 0.25 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 100 --batches 200 > "$O/prof-200.json" 2> "$O/prof-200.err"
echo "bench rc $?"; grep 'epoch\|host store' "$O/prof-200.err" | tail -4
timeout 120 /tmp/node run-bench.js --hbm-budget 0.25,0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/hbm-budget-40.json" 2> "$O/hbm-budget-40.err"
echo "bench rc $?"; head -c 2500 "$O/hbm-budget-40.json"; echo
ABACUS_HBM_BUDGET_GB=2 timeout 150 /tmp/node run-bench.js --offload-beyond full --vocab 3000000 --hash-vocab 1000000 --train-batches 40 --test-batches 8 > "$O/beyond-small-full.json" 2> "$O/beyond-small-full.err"
echo "beyond full rc $?"; cat "$O/beyond-small-full.json"; tail -3 "$O/beyond-small-full.err"
timeout 120 /tmp/node run-bench.js --offload-beyond hashed --vocab 3000000 --hash-vocab 1000000 --train-batches 40 --test-batches 8 > "$O/beyond-small-hashed.json" 2> "$O/beyond-small-hashed.err"
echo "beyond hashed rc $?"; cat "$O/beyond-small-hashed.json"; tail -3 "$O/beyond-small-hashed.err"
