#!/usr/bin/env bash
# device call 3 (the same two-H200 host as call 2): why 40 batches at a cache of a tenth ran at 2.0 ms
# a step in call 2 (0.7 in call 1): the host's NUMA layout, that case alone, then with the fill profile
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
command -v numactl && numactl -H | head -12; lscpu | grep -i "numa\|socket\|model name"
nvidia-smi topo -m 2>/dev/null | head -5
[ -x /tmp/node ] || { xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node; }
cd libs/runtime/bench/dist
timeout 100 /tmp/node run-bench.js --hbm-budget 0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/hbm-budget-40-0.1.json" 2> "$O/hbm-budget-40-0.1.err"
echo "bench rc $?"; head -c 1500 "$O/hbm-budget-40-0.1.json"; echo
ABACUS_CUDA_VERBOSE=1 timeout 100 /tmp/node run-bench.js --hbm-budget 0.25,0.1 --vocab 2000000 --zipf 1.05 --batch 8192 --steps 200 > "$O/prof-40.json" 2> "$O/prof-40.err"
echo "bench rc $?"; grep 'epoch\|host store\|device cache' "$O/prof-40.err" | cut -c1-420
