#!/usr/bin/env bash
# device call 7: the in-place fine-tune parity with the CUDA addon of 03b0750 (the commit before
# 0167127, the sparse-leads change) and of 0167127, to find where it started failing
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
tar -xJf .gpu/app.tar.xz ./libs/runtime/build/Release/
R=libs/runtime/build/Release/abacus_runtime_cuda.node
cp $R /tmp/new.node
for which in 03b0750 0167127 03b0750; do
  if [ $which = new ]; then cp /tmp/new.node $R; else cp .gpu-test/$which/abacus_runtime_cuda.node $R; fi
  ABACUS_GPU_MEMCHECK=0 timeout 200 bash scripts/gpu-vitest.sh run -t 'fine-tunes in place' > "$O/in-place-$which.txt" 2>&1
  echo "$which: rc $? $(grep -o '"name":"sum, sparse Adam","off":\[\],"maxPredDiff":[0-9.e-]*' "$O/in-place-$which.txt" | head -1)"
done
