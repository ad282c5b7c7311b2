#!/usr/bin/env bash
# device call 11 (one H200; the script of call 5): the whole GPU project (CPU<->CUDA parity, stress,
# faults, in place, repeated fits, device metrics, the host-memory test) and the stress under memcheck,
# on the session's last addon (streamed fills ahead from windows on the device)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
timeout 560 bash scripts/gpu-vitest.sh run > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "Test Files|Tests |✗|×|FAIL|memcheck|ERROR SUMMARY|error" "$O/gpu-vitest.txt" | head -30
