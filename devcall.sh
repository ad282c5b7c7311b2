#!/usr/bin/env bash
# 10M x 100 on one GPU with IV on 8 threads (is the build slowed by the 16 IV threads beside it?)
set -u
O=${OUT:-/tmp/o}; mkdir -p $O
export PATH=/tmp/abacus-gpu/bin:$PATH
T0=$(date +%s)
ABACUS_SCORE_THREADS=8 ABACUS_RUNTIME_BACKEND=cuda bash scripts/gpu-host.sh up > /tmp/up.log 2>&1 || { tail -30 /tmp/up.log; exit 1; }
mkdir -p /tmp/s
OUT=/tmp/s REGISTER_AT=/tmp/sets timeout 330 bash bench/gpu-scale.sh 10000000 100 > /tmp/s/scale.txt 2>&1
echo "scale rc $? at $(( $(date +%s) - T0 )) s"
cp /tmp/s/scale-subtract-*.json $O/ 2>/dev/null; tail -6 /tmp/s/scale.txt | cut -c1-300
