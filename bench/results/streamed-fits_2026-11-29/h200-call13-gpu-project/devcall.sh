#!/usr/bin/env bash
# device call 13: the CUDA test project's FP32 fit repeats, the in-place parity in FP32 and evaluateFirst
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
tar -xJf .gpu/app.tar.xz ./libs/runtime/build/Release/
ABACUS_GPU_MEMCHECK=0 timeout 300 bash scripts/gpu-vitest.sh run -t 'fits repeated|fine-tunes in place|evaluateFirst' > "$O/gpu-vitest.txt" 2>&1
echo "gpu-vitest rc $?"
grep -E "✓|×|Test Files|Tests |fitRepeat|checkpointVs" "$O/gpu-vitest.txt" | head -20
