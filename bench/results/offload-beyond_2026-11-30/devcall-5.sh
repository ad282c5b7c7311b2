#!/usr/bin/env bash
# device call 5 (the two-H200 host of calls 2-4): the whole GPU project (CPU<->CUDA parity, stress,
# faults, in place, repeated fits, device metrics, the host-memory test) and the stress under memcheck,
# on the addon of calls 2-4 (the host model's row arrays filled on its threads, the new staging)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
timeout 560 bash scripts/gpu-vitest.sh run > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "Test Files|Tests |✗|×|FAIL|memcheck|ERROR SUMMARY|error" "$O/gpu-vitest.txt" | head -30
