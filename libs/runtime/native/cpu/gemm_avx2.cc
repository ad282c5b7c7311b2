#include <immintrin.h>

#include "gemm.h"

#define KERNEL_ATTR
#define GEMM_BLOCK_NAME gemm_block_avx2
namespace {
constexpr int MR = 6, NR = 16, VW = 8;
using VT = __m256;
inline VT vzero() { return _mm256_setzero_ps(); }
inline VT vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, VT v) { _mm256_storeu_ps(p, v); }
inline VT vbroadcast(const float* p) { return _mm256_broadcast_ss(p); }
inline VT vfmadd(VT a, VT b, VT c) { return _mm256_fmadd_ps(a, b, c); }
inline VT vadd(VT a, VT b) { return _mm256_add_ps(a, b); }
inline VT vmax(VT a, VT b) { return _mm256_max_ps(a, b); }
inline VT vmask(VT x, VT m) { return _mm256_and_ps(x, _mm256_cmp_ps(m, _mm256_setzero_ps(), _CMP_GT_OQ)); }
}  // namespace
#include "gemm_driver.inc"
