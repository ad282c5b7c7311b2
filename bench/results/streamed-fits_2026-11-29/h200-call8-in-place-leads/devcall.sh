#!/usr/bin/env bash
# device call 8: the in-place fine-tune parity with this commit's CUDA addon, sparse leads off
# (ABACUS_CUDA_SPARSE_LEADS=0) and on; then with an addon whose lead buffers start zeroed (.gpu-test/zeroed/)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
tar -xJf .gpu/app.tar.xz ./libs/runtime/build/Release/
R=libs/runtime/build/Release/abacus_runtime_cuda.node
for run in leads-off leads-on zeroed; do
  [ $run = zeroed ] && cp .gpu-test/zeroed/abacus_runtime_cuda.node $R
  if [ $run = leads-off ]; then export ABACUS_CUDA_SPARSE_LEADS=0; else unset ABACUS_CUDA_SPARSE_LEADS; fi
  ABACUS_GPU_MEMCHECK=0 timeout 200 bash scripts/gpu-vitest.sh run -t 'fine-tunes in place' > "$O/in-place-$run.txt" 2>&1
  echo "$run: rc $? $(grep -o '"name":"sum, sparse Adam","off":\[\],"maxPredDiff":[0-9.e-]*' "$O/in-place-$run.txt" | head -1)"
done
