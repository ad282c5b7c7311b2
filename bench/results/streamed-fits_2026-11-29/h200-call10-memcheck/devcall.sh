#!/usr/bin/env bash
# device call 10: the in-place fine-tune parity under compute-sanitizer memcheck (reads and writes
# outside any allocation), with this commit's CUDA addon
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
tar -xJf .gpu/app.tar.xz ./libs/runtime/build/Release/
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
ABACUS_GPU_MEMCHECK=0 timeout 30 bash scripts/gpu-vitest.sh run -t 'nothing matches this' > /dev/null 2>&1  # unpack node and vitest
W=/tmp/abacus-gpu-vitest
timeout 400 "$cs" --tool memcheck --print-limit 30 "$W/node" node_modules/vitest/vitest.mjs run \
  --config libs/runtime/test-gpu/vitest.config.ts --project gpu libs/runtime/test-gpu/cuda-backend.gpu.test.ts -t 'fine-tunes in place' > "$O/memcheck.txt" 2>&1
echo "memcheck rc $?"
grep -E "Uninitialized|at 0x|by thread|ERROR SUMMARY|Host Frame|in .*kernel|=========     " "$O/memcheck.txt" | head -40
