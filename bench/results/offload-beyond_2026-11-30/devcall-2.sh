#!/usr/bin/env bash
# device call 2 (two H200s, 256 GiB host): the row arrays of the host model filled on its threads (the
# model's creation), the bench's step time from the train call's first step (its setup is not part of
# `seconds`: calls before subtracted it once more); one pass over 200 batches and 40 batches repeated
# again; then ctr26 with 32M ids a slot (832M rows, 158 GiB of tables and Adam state: more than the
# card's memory) in host memory under the default budget, against 8M hashed ids a slot on the device
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L; nproc; free -g | head -2
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
timeout 200 /tmp/node run-bench.js --hbm-budget 0.25,0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 190 --batches 200 > "$O/hbm-budget-200.json" 2> "$O/hbm-budget-200.err"
echo "bench rc $?"; head -c 2500 "$O/hbm-budget-200.json"; echo
timeout 120 /tmp/node run-bench.js --hbm-budget 0.25,0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/hbm-budget-40.json" 2> "$O/hbm-budget-40.err"
echo "bench rc $?"; head -c 2500 "$O/hbm-budget-40.json"; echo
B="--vocab 32000000 --hash-vocab 8000000 --zipf 1.05 --batch 8192 --train-batches 256 --test-batches 24"
( while sleep 15; do echo "$(date +%T) $(free -g | awk '/Mem/{print "host used " $3 " GiB"}') $(nvidia-smi --query-gpu=memory.used --format=csv,noheader | tr '\n' ' ')"; done ) > "$O/memory.log" 2>&1 &
mon=$!
T=""; [ -x /usr/bin/time ] && T="/usr/bin/time -v"
timeout 240 /tmp/node run-bench.js --offload-beyond hashed $B > "$O/beyond-hashed.json" 2> "$O/beyond-hashed.err"
echo "beyond hashed rc $?"; cat "$O/beyond-hashed.json"; tail -3 "$O/beyond-hashed.err"
$T timeout 420 /tmp/node run-bench.js --offload-beyond full $B > "$O/beyond-full.json" 2> "$O/beyond-full.err"
echo "beyond full rc $?"; cat "$O/beyond-full.json"; grep -v "^\s" "$O/beyond-full.err" | tail -5; grep "Maximum resident\|Elapsed" "$O/beyond-full.err"
kill $mon; tail -30 "$O/memory.log"
