// Single-precision GEMM: C[MxN] = (accumulate ? C : 0) + op(A)[MxK] * op(B)[KxN], with a fused
// epilogue (bias, ReLU, or ReLU-derivative mask). Cache-blocked (Goto style: packed A in L2, packed
// B micro-panels in L1) with AVX2/FMA 6x16 and AVX-512 12x32 micro-kernels chosen at run time.
// Threads own disjoint tiles of C and always reduce the full K, so results never depend on timing.
#pragma once
#include <cstdint>

#include "../common/thread_pool.h"

namespace abacus {

// element (i, j) is p[i * rs + j * cs]; a transpose is just swapped strides
struct MatRef {
  const float* p;
  int64_t rs, cs;
};

struct Epilogue {
  const float* bias = nullptr;  // + bias[j]
  bool relu = false;            // max(x, 0)
  const float* mask = nullptr;  // x * (mask[i * ldmask + j] > 0): ReLU backward
  int64_t ldmask = 0;
};

using GemmBlockFn = void (*)(int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K, MatRef A, MatRef B, float* C,
                             int64_t ldc, bool accumulate, const Epilogue& ep);

void gemm_block_avx2(int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K, MatRef A, MatRef B, float* C, int64_t ldc,
                     bool accumulate, const Epilogue& ep);
void gemm_block_avx512(int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K, MatRef A, MatRef B, float* C, int64_t ldc,
                       bool accumulate, const Epilogue& ep);

// "avx512" or "avx2" (set ABACUS_NO_AVX512=1 to force AVX2)
const char* gemm_isa();

void sgemm(ThreadPool& pool, int64_t M, int64_t N, int64_t K, MatRef A, MatRef B, float* C, int64_t ldc, bool accumulate,
           const Epilogue& ep = Epilogue());

}  // namespace abacus
