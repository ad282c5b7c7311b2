#!/usr/bin/env bash
# device call 4: the in-place fine-tune parity (CUDA test project), twice with this commit's addon and
# twice with the addon of the commit before the in-order first epoch (.gpu-test/old/): is its failure new?
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
tar -xJf .gpu/app.tar.xz ./libs/runtime/build/Release/
R=libs/runtime/build/Release/abacus_runtime_cuda.node
cp $R /tmp/new.node
for which in new new old old; do
  if [ $which = old ]; then cp .gpu-test/old/abacus_runtime_cuda.node $R; else cp /tmp/new.node $R; fi
  ABACUS_GPU_MEMCHECK=0 timeout 200 bash scripts/gpu-vitest.sh run -t 'fine-tunes in place' > "$O/in-place-$which.txt" 2>&1
  echo "$which: rc $?"; grep -o '"name":"sum, sparse Adam","off":\[\],"maxPredDiff":[0-9.e-]*' "$O/in-place-$which.txt" | head -1
done
