#include "gemm.h"

#include <cstdlib>

namespace abacus {

namespace {
bool use_avx512() {
  static const bool v = [] {
    const char* off = std::getenv("ABACUS_NO_AVX512");
    if (off && off[0] == '1') return false;
    __builtin_cpu_init();
    return (bool)__builtin_cpu_supports("avx512f");
  }();
  return v;
}
}  // namespace

const char* gemm_isa() { return use_avx512() ? "avx512" : "avx2"; }

void sgemm(ThreadPool& pool, int64_t M, int64_t N, int64_t K, MatRef A, MatRef B, float* C, int64_t ldc, bool accumulate,
           const Epilogue& ep) {
  GemmBlockFn fn = use_avx512() ? gemm_block_avx512 : gemm_block_avx2;
  int T = pool.size();
  // Split the larger of M and N into static per-thread ranges; K is never split.
  bool by_rows = M >= N || M >= 96 * T;
  int64_t work = M * N * K;
  if (T == 1 || work < (1 << 18)) {
    fn(0, M, 0, N, K, A, B, C, ldc, accumulate, ep);
    return;
  }
  pool.run([&](int t) {
    int64_t b, e;
    if (by_rows) {
      ThreadPool::range(M, t, T, b, e, 24);
      fn(b, e, 0, N, K, A, B, C, ldc, accumulate, ep);
    } else {
      ThreadPool::range(N, t, T, b, e, 32);
      fn(0, M, b, e, K, A, B, C, ldc, accumulate, ep);
    }
  });
}

}  // namespace abacus
