#!/usr/bin/env bash
# device call 3 (carry .gpu/node.xz, .gpu/app.tar.xz, .gpu-test): the CUDA test project's evaluateFirst
# test and the in-place fine-tune parity beside it
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
tar -xJf .gpu/app.tar.xz ./libs/runtime/build/Release/
ABACUS_GPU_MEMCHECK=0 timeout 400 bash scripts/gpu-vitest.sh run -t 'evaluateFirst|fine-tunes in place' > "$O/gpu-vitest.txt" 2>&1
echo "gpu-vitest rc $?"
grep -E "✓|✗|×|FAIL|Tests|skipped|passed" "$O/gpu-vitest.txt" | head -20
