#!/usr/bin/env bash
# device call 8 (carry as call 1): the whole GPU project (CPU<->CUDA parity, stress, fault, in place,
# host memory with the ONNX check, ...), and the random-shape stress again under compute-sanitizer memcheck
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
nvidia-smi -L
timeout 420 bash scripts/gpu-vitest.sh run > "$O/gpu-vitest-all.txt" 2>&1
echo "vitest all rc $?"; grep -E "Test Files|Tests |✓|✗|×|FAIL|ERROR SUMMARY|AssertionError|expected" "$O/gpu-vitest-all.txt" | head -30
