#!/usr/bin/env bash
# The CUDA test project (`vitest run --project gpu`) on a GPU host that has no Node.js and no
# node_modules: `pack` (on the build machine, after `bash scripts/gpu-host.sh pack` and
# `bash scripts/build-cuda.sh`) writes .gpu-test/vitest.tar.xz (vitest and what it needs, zod, protobufjs, and
# the workspace link of @abacus/runtime); `run` (on the GPU host, from the repository root, with
# .gpu/node.xz, .gpu-test/ and libs/runtime/build/Release/*.node brought along) unpacks Node and
# those modules and runs the project with libs/runtime/test-gpu/vitest.config.ts.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
say() { printf '[gpu-vitest] %s\n' "$*"; }
die() { printf '[gpu-vitest] error: %s\n' "$*" >&2; exit 1; }

closure() { # the packages vitest, zod and protobufjs (the ONNX export) need, as node_modules paths (npm's hoisted layout)
  node -e '
    const fs = require("fs"), path = require("path");
    const root = process.cwd(), seen = new Set(), queue = [["vitest", root], ["zod", root], ["protobufjs", root]];
    const find = (name, from) => {
      for (let d = from; ; d = path.dirname(d)) {
        const p = path.join(d, "node_modules", name);
        if (fs.existsSync(path.join(p, "package.json"))) return p;
        if (path.dirname(d) === d) return null;
      }
    };
    while (queue.length) {
      const [name, from] = queue.pop();
      const dir = find(name, from);
      if (!dir || seen.has(dir)) continue;
      seen.add(dir);
      const pj = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
      for (const dep of Object.keys({ ...pj.dependencies, ...pj.optionalDependencies })) queue.push([dep, dir]);
    }
    console.log([...seen].map((d) => path.relative(root, d)).join("\n"));
  '
}

case "${1:-}" in
  pack)
    [ -d node_modules/vitest ] || die "node_modules/vitest is missing: npm ci"
    [ -f libs/runtime/build/Release/abacus_runtime_cuda.node ] || die "build the CUDA addon first: bash scripts/build-cuda.sh"
    mkdir -p .gpu-test
    # shellcheck disable=SC2046
    tar -cJf .gpu-test/vitest.tar.xz node_modules/@abacus/runtime $(closure)
    say ".gpu-test/vitest.tar.xz: $(du -h .gpu-test/vitest.tar.xz | cut -f1)"
    say "bring .gpu/node.xz, .gpu-test/ and libs/runtime/build/Release/*.node to the GPU host, then: bash scripts/gpu-vitest.sh run"
    ;;
  run)
    [ -f .gpu-test/vitest.tar.xz ] && [ -f .gpu/node.xz ] || die ".gpu-test/vitest.tar.xz or .gpu/node.xz is missing: pack on the build machine"
    work="${ABACUS_GPU_VITEST_DIR:-/tmp/abacus-gpu-vitest}"
    mkdir -p "$work"
    [ -x "$work/node" ] || { xz -dc .gpu/node.xz >"$work/node.tmp" && chmod 755 "$work/node.tmp" && mv "$work/node.tmp" "$work/node"; }
    [ -d node_modules/vitest ] || tar -xJf .gpu-test/vitest.tar.xz
    say "node $("$work/node" -v), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1)"
    rc=0
    "$work/node" node_modules/vitest/vitest.mjs run --config libs/runtime/test-gpu/vitest.config.ts --project gpu "${@:2}" || rc=$?
    # the random-shape stress again under compute-sanitizer memcheck (ABACUS_GPU_MEMCHECK=0 skips it):
    # any invalid access, leak of an error or misuse of the API the tool reports fails the check
    if [ "${ABACUS_GPU_MEMCHECK:-1}" != 0 ] && [ $# -le 1 ]; then
      cs=$(command -v compute-sanitizer || true)
      if [ -z "$cs" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ]; then cs=/usr/local/cuda/bin/compute-sanitizer; fi
      if [ -n "$cs" ]; then
        say "the random-shape stress under compute-sanitizer memcheck"
        "$cs" --tool memcheck --error-exitcode 3 --print-limit 20 "$work/node" node_modules/vitest/vitest.mjs run \
          --config libs/runtime/test-gpu/vitest.config.ts --project gpu libs/runtime/test-gpu/cuda-stress.gpu.test.ts -t 'no fault' || rc=1
      else
        say "compute-sanitizer not found (CUDA toolkit's bin/): memcheck not run"
      fi
    fi
    exit $rc
    ;;
  *) die "usage: bash scripts/gpu-vitest.sh pack | run" ;;
esac
