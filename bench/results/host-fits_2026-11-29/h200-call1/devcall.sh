#!/usr/bin/env bash
# device call: add (real candidates) and divide on cuda after batching their seeds over the lanes;
# subtract 1M x 40 twice; a batch of CPU fits on the host's cores (ABACUS_HOST_FITS's default)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
export PATH=/tmp/abacus-gpu/bin:$PATH
T0=$(date +%s)
at() { echo "$1 at $(( $(date +%s) - T0 )) s"; }
nvidia-smi -L; nproc; lscpu | grep 'Model name'
ABACUS_RUNTIME_BACKEND=cuda bash scripts/gpu-host.sh up > /tmp/up.log 2>&1 || { tail -30 /tmp/up.log; exit 1; }
at up
timeout 170 abacus bench experiment add --rows 1000000 --features 24 --candidates 10 --backend cuda --json --out "$O/add-cuda-1000000x24-c10.json" > /tmp/add.log 2>&1; at "add rc $?"
tail -3 /tmp/add.log | cut -c1-300
timeout 90 abacus bench experiment divide --rows 1000000 --features 40 --backend cuda --json --out "$O/divide-cuda-1000000x40-t4.json" > /tmp/div.log 2>&1; at "divide rc $?"
tail -3 /tmp/div.log | cut -c1-300
mkdir -p /tmp/l
FRESH=1 OUT=/tmp/l timeout 150 bash bench/gpu-lanes.sh 1000000 40 1:3 1:3 > /tmp/l/lanes.txt 2>&1; at "lanes rc $?"
cp /tmp/l/subtract-cuda-*.json "$O/" 2>/dev/null; tail -2 /tmp/l/lanes.txt | cut -c1-400
B=libs/runtime/bench/dist/run-bench.js
A=libs/runtime/bench/dist/abacus_runtime.node
timeout 100 /tmp/abacus-gpu/bin/node "$B" --host-fits --addon "$A" --threads "$(nproc)" --at-once 1,2,4,8 --fits 3,6 --repeats 1 > "$O/host-fits-gpu-host.json" 2>/tmp/hf.err; at "host-fits rc $?"
tail -c 600 "$O/host-fits-gpu-host.json"; tail -3 /tmp/hf.err
