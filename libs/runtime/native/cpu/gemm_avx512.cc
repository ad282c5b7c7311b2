// Built with -mavx512f in its own static library; only called when the CPU reports AVX-512F.
#include <immintrin.h>

#include "gemm.h"

#define KERNEL_ATTR
#define GEMM_BLOCK_NAME gemm_block_avx512
namespace {
constexpr int MR = 12, NR = 32, VW = 16;
using VT = __m512;
inline VT vzero() { return _mm512_setzero_ps(); }
inline VT vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, VT v) { _mm512_storeu_ps(p, v); }
inline VT vbroadcast(const float* p) { return _mm512_set1_ps(*p); }
inline VT vfmadd(VT a, VT b, VT c) { return _mm512_fmadd_ps(a, b, c); }
inline VT vadd(VT a, VT b) { return _mm512_add_ps(a, b); }
inline VT vmax(VT a, VT b) { return _mm512_max_ps(a, b); }
inline VT vmask(VT x, VT m) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m, _mm512_setzero_ps(), _CMP_GT_OQ), x); }
}  // namespace
#include "gemm_driver.inc"
