#!/usr/bin/env bash
# device call 1 (carry .gpu/node.xz and libs/runtime/bench/dist): K warm fine-tunes as a prune round
# runs them (K lane models at once) against one K-times-wide model (the floor of one launch for K
# sets), at the 1M x 40 subtract's model shape (27 numeric inputs, 13 slots with the simulated
# world's bag lengths and vocabularies), 300 steps at batch 1024 on 307,200 rows (a seed's sample)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
xz -dc .gpu/node.xz > /tmp/node && chmod 755 /tmp/node
cd libs/runtime/bench/dist
SHAPE="--numeric 27 --slots 13 --slot-max-len 1,1,1,1,1,1,1,1,1,8,10,5,5 --slot-vocab 3,5,24,50,200,1000,5000,20000,100000,2000,2000,2000,2000"
for r in 1 2; do
  /tmp/node run-bench.js --launch-proxy --backend cuda --rows 307200 --ks 1,2,3,4,6,9 --repeats 5 $SHAPE > "$O/launch-proxy-$r.json" 2> "$O/launch-proxy-$r.err"
  echo "rc $?"; cat "$O/launch-proxy-$r.json" | head -c 3000; echo
done
ABACUS_CUDA_MATH=fp32 /tmp/node run-bench.js --launch-proxy --backend cuda --rows 307200 --ks 1,3,6 --repeats 5 $SHAPE > "$O/launch-proxy-fp32.json" 2> "$O/launch-proxy-fp32.err"
echo "rc $?"; head -c 2000 "$O/launch-proxy-fp32.json"
