#!/usr/bin/env bash
# device call 9 (carry as call 1): call 8's one failure was the test bundle lacking protobufjs (the
# ONNX export it now checks); the host-memory test again with it packed
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
timeout 150 bash scripts/gpu-vitest.sh run --reporter=verbose -t 'host memory' > "$O/gpu-vitest.txt" 2>&1
echo "vitest rc $?"; grep -E "✓|✗|×|passed|failed|Error|expected|AssertionError" "$O/gpu-vitest.txt" | head -20
