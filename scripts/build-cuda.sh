#!/usr/bin/env bash
# Builds the runtime's CUDA addon: libs/runtime/build/Release/abacus_runtime_cuda.node.
# Needs nvcc (CUDA 12.x/13.x), g++ and the Node headers; NOT cuBLAS: cuBLASLt is loaded at run
# time with dlopen (libcublasLt.so.13; override with ABACUS_CUBLASLT=/path). cudart is linked
# statically, so the .node runs on a GPU host with only the driver + libcublasLt.
# The CPU addon (scripts/build-native.sh) and CI never need this.
#   CUDA_ARCH=sm_90 (default)   NVCC=nvcc   NODE_INCLUDE=/usr/include/node
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rt="$root/libs/runtime"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
[ -x "$nvcc" ] || { echo "nvcc not found: the CUDA addon needs the CUDA toolkit (12.x/13.x)" >&2; exit 1; }
cuda_home="${CUDA_HOME:-}"
if [ -z "$cuda_home" ]; then
  cuda_home="$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)"
  [ -f "$cuda_home/lib64/libcudart_static.a" ] || cuda_home=/usr/local/cuda
fi
arch="${CUDA_ARCH:-sm_90}"
node_inc="${NODE_INCLUDE:-}"
if [ -z "$node_inc" ]; then
  for d in /usr/include/node /usr/local/include/node "$(dirname "$(dirname "$(command -v node)")")/include/node"; do
    [ -f "$d/node_api.h" ] && { node_inc="$d"; break; }
  done
fi
[ -f "$node_inc/node_api.h" ] || { echo "Node headers not found (set NODE_INCLUDE)" >&2; exit 1; }
napi_inc="$root/node_modules/node-addon-api"
obj="$rt/build/cuda-obj"
out="$rt/build/Release/abacus_runtime_cuda.node"
mkdir -p "$obj" "$rt/build/Release"
defs="-DNAPI_VERSION=8 -DNAPI_CPP_EXCEPTIONS -DNODE_ADDON_API_DISABLE_DEPRECATED"
cflags="-O3 -mavx2 -mfma -msse4.2 -std=c++17 -pthread -fno-math-errno -fPIC -fexceptions"
(
  flock 9
  pids=()
  objs=()  # linked explicitly (not $obj/*.o), so objects of renamed or removed sources never get in
  for f in common/crc32c.cc common/shard.cc cpu/gemm.cc cpu/gemm_avx2.cc cpu/embedding_bag.cc cpu/optimizers.cc cpu/metrics.cc cpu/mlp_bf16_pack.cc cpu/model.cc; do
    o="$obj/$(echo "$f" | tr / _).o"
    objs+=("$o")
    if [ ! -f "$o" ] || [ "$rt/native/$f" -nt "$o" ] || [ -n "$(find "$rt/native/cpu" "$rt/native/common" -name '*.h' -newer "$o" 2>/dev/null)" ]; then
      g++ $cflags -c "$rt/native/$f" -o "$o" & pids+=($!)
    fi
  done
  o="$obj/cpu_gemm_avx512.cc.o"
  objs+=("$o")
  if [ ! -f "$o" ] || [ "$rt/native/cpu/gemm_avx512.cc" -nt "$o" ]; then g++ $cflags -mavx512f -c "$rt/native/cpu/gemm_avx512.cc" -o "$o" & pids+=($!); fi
  # the CPU model's bf16 eval forward (the host mirror links it; the GPU path never calls it)
  if [ -f "$rt/native/cpu/mlp_bf16.cc" ]; then
    o="$obj/cpu_mlp_bf16.cc.o"
    objs+=("$o")
    if [ ! -f "$o" ] || [ "$rt/native/cpu/mlp_bf16.cc" -nt "$o" ] || [ -n "$(find "$rt/native/cpu" -name '*.h' -newer "$o" 2>/dev/null)" ]; then
      g++ $cflags -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mamx-tile -mamx-bf16 -c "$rt/native/cpu/mlp_bf16.cc" -o "$o" & pids+=($!)
    fi
  fi
  g++ $cflags $defs -I"$node_inc" -I"$napi_inc" -I"$cuda_home/include" -c "$rt/native/cuda/addon_cuda.cc" -o "$obj/addon_cuda.o" & pids+=($!)
  objs+=("$obj/addon_cuda.o")
  # CUPTI trace (bench: launch counts, per-kernel times); libcupti is dlopen-ed at run time
  cupti_inc="$cuda_home/include"
  [ -f "$cupti_inc/cupti_activity.h" ] || cupti_inc="$cuda_home/extras/CUPTI/include"
  g++ $cflags -I"$cuda_home/include" -I"$cupti_inc" -c "$rt/native/cuda/cupti_trace.cc" -o "$obj/cupti_trace.o" & pids+=($!)
  objs+=("$obj/cupti_trace.o")
  # the CUDA model, one file per concern (cuda/cuda_impl.cuh lists them); each is rebuilt when it or
  # any header of cuda/, cpu/ or common/ is newer than its object
  for f in cuda/kernels.cu cuda/device.cu cuda/cuda_model.cu cuda/residency.cu cuda/gemm.cu cuda/forward.cu \
           cuda/train_step.cu cuda/metrics.cu cuda/predict.cu cuda/ablation.cu cuda/emb_cache.cu; do
    o="$obj/$(echo "$f" | tr / _).o"
    objs+=("$o")
    if [ ! -f "$o" ] || [ "$rt/native/$f" -nt "$o" ] || [ -n "$(find "$rt/native/cuda" "$rt/native/cpu" "$rt/native/common" \( -name '*.h' -o -name '*.cuh' \) -newer "$o" 2>/dev/null)" ]; then
      "$nvcc" -std=c++17 -O3 -arch="$arch" -Xcompiler -fPIC,-fexceptions,-pthread -diag-suppress 20012,186,177,550 \
        -c "$rt/native/$f" -o "$o" & pids+=($!)
    fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
  g++ -shared -o "$out" "${objs[@]}" "$cuda_home/lib64/libcudart_static.a" -ldl -lrt -pthread
) 9>"/tmp/abacus-build-cuda.lock"
echo "built $out"
