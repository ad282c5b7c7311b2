// AVX512-BF16 kernels of the eval forward (see mlp_bf16.h). Built with -mavx512f -mavx512bw
// -mavx512vl -mavx512bf16 in its own static library; only called when bf16_eval_enabled().
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "mlp_bf16.h"

namespace abacus {

namespace {

constexpr int MR = 12;  // rows per micro tile (12 x 32 FP32 accumulators = 24 zmm)
constexpr int MB = 48;  // rows per block: one panel of weights is reused by MB / MR tiles

inline __m512bh as_bh(__m512i v) { return (__m512bh)v; }

// X rows (FP32) -> A rows (bf16, stride kp), columns [k, kp) and rows [rows, rpad) zeroed
void to_bf16(const float* X, int64_t ldx, int rows, int rpad, int k, int kp, uint16_t* A) {
  for (int r = 0; r < rows; ++r) {
    const float* x = X + r * ldx;
    uint16_t* a = A + (int64_t)r * kp;
    int j = 0;
    for (; j + 16 <= k; j += 16) _mm256_storeu_si256((__m256i*)(a + j), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + j)));
    if (j < k) {
      const __mmask16 m = (__mmask16)((1u << (k - j)) - 1);
      _mm256_mask_storeu_epi16(a + j, m, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + j)));
    }
    for (int c = k; c < kp; ++c) a[c] = 0;
  }
  if (rpad > rows) std::memset(A + (int64_t)rows * kp, 0, sizeof(uint16_t) * (size_t)(rpad - rows) * kp);
}

// One MR x 32 tile over the full K: C = A[MR x kp] * panel + bias, then ReLU.
// out16: bf16 output (stride ldo) or out32: FP32 output (stride ldo). zpre: FP32 pre-activation
// for rows < zrows and columns < zcols (stride ldz), columns relative to the panel.
inline void tile(const uint16_t* A, int kp, const uint16_t* W, const float* bias, uint16_t* out16, float* out32, int64_t ldo,
                 float* zpre, int64_t ldz, int zrows, int zcols) {
  __m512 acc[MR][2];
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const int pairs = kp / 2;
  const int32_t* a32 = (const int32_t*)A;
  const int64_t lda32 = kp / 2;
  for (int p = 0; p < pairs; ++p) {
    const __m512bh b0 = as_bh(_mm512_loadu_si512(W + p * 64)), b1 = as_bh(_mm512_loadu_si512(W + p * 64 + 32));
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
      const __m512bh a = as_bh(_mm512_set1_epi32(a32[i * lda32 + p]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], a, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], a, b1);
    }
  }
  const __m512 bb0 = _mm512_loadu_ps(bias), bb1 = _mm512_loadu_ps(bias + 16), zero = _mm512_setzero_ps();
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
    __m512 x0 = _mm512_add_ps(acc[i][0], bb0), x1 = _mm512_add_ps(acc[i][1], bb1);
    if (zpre && i < zrows) {
      float* z = zpre + i * ldz;
      const int c0 = std::min(16, zcols), c1 = std::max(0, std::min(16, zcols - 16));
      _mm512_mask_storeu_ps(z, (__mmask16)((1u << c0) - 1), x0);
      if (c1) _mm512_mask_storeu_ps(z + 16, (__mmask16)((1u << c1) - 1), x1);
    }
    x0 = _mm512_max_ps(x0, zero);
    x1 = _mm512_max_ps(x1, zero);
    if (out16) {
      _mm512_storeu_si512(out16 + i * ldo, (__m512i)_mm512_cvtne2ps_pbh(x1, x0));
    } else {
      _mm512_storeu_ps(out32 + i * ldo, x0);
      _mm512_storeu_ps(out32 + i * ldo + 16, x1);
    }
  }
}

// AMX: a 32 x 32 block over the full K (kp multiple of 32) in four 16 x 16 FP32 tiles, then the
// same epilogue as tile(). Tiles 0-3: C, 4-5: A (16 rows x 32 k), 6-7: B (16 k-pairs x 16 columns).
struct alignas(64) TileCfg {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
void amx_config() {
  TileCfg c;
  std::memset(&c, 0, sizeof(c));
  c.palette = 1;
  for (int t = 0; t < 8; ++t) { c.colsb[t] = 64; c.rows[t] = 16; }
  _tile_loadconfig(&c);
}
inline void amx_block(const uint16_t* A, int kp, const uint16_t* W, const float* bias, uint16_t* out16, float* out32,
                      int64_t ldo, float* zpre, int64_t ldz, int zrows, int zcols) {
  alignas(64) float c[32 * 32];
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int64_t sa = (int64_t)kp * 2;
  for (int k = 0; k < kp; k += 32) {
    _tile_loadd(4, A + k, sa);
    _tile_loadd(5, A + 16 * kp + k, sa);
    _tile_loadd(6, W + (k / 2) * 64, 128);
    _tile_loadd(7, W + (k / 2) * 64 + 32, 128);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, 128);
  _tile_stored(1, c + 16, 128);
  _tile_stored(2, c + 16 * 32, 128);
  _tile_stored(3, c + 16 * 32 + 16, 128);
  const __m512 bb0 = _mm512_loadu_ps(bias), bb1 = _mm512_loadu_ps(bias + 16), zero = _mm512_setzero_ps();
  for (int i = 0; i < 32; ++i) {
    __m512 x0 = _mm512_add_ps(_mm512_load_ps(c + i * 32), bb0), x1 = _mm512_add_ps(_mm512_load_ps(c + i * 32 + 16), bb1);
    if (zpre && i < zrows) {
      float* z = zpre + i * ldz;
      const int c0 = std::min(16, zcols), c1 = std::max(0, std::min(16, zcols - 16));
      _mm512_mask_storeu_ps(z, (__mmask16)((1u << c0) - 1), x0);
      if (c1) _mm512_mask_storeu_ps(z + 16, (__mmask16)((1u << c1) - 1), x1);
    }
    x0 = _mm512_max_ps(x0, zero);
    x1 = _mm512_max_ps(x1, zero);
    if (out16) {
      _mm512_storeu_si512(out16 + i * ldo, (__m512i)_mm512_cvtne2ps_pbh(x1, x0));
    } else {
      _mm512_storeu_ps(out32 + i * ldo, x0);
      _mm512_storeu_ps(out32 + i * ldo + 16, x1);
    }
  }
}

struct Scratch {
  std::vector<uint16_t> a, b;
  std::vector<float> h;
};

}  // namespace

void bf16_mlp_rows(const Bf16Mlp& m, bool amx, int l0, const float* X, int64_t ldx, int64_t n, const float* wide, float* logit,
                   float* zpre, int64_t ldz) {
  static thread_local Scratch s;
  const int L = (int)m.layers.size();
  int maxw = 0;
  for (const auto& ly : m.layers) maxw = std::max({maxw, ly.kp, ly.np});
  const int npl = m.layers[L - 1].np;
  if (amx) amx_config();
  const int mb = amx ? 64 : MB, mr = amx ? 32 : MR;
  if (s.a.size() < (size_t)64 * maxw) { s.a.assign((size_t)64 * maxw, 0); s.b.assign((size_t)64 * maxw, 0); }
  if (s.h.size() < (size_t)64 * npl) s.h.assign((size_t)64 * npl, 0.f);
  const int in_real = l0 == 0 ? m.layers[0].in : m.layers[l0 - 1].out;
  if (l0 == L) {  // only the output layer: the same FP32 dot as after the last hidden layer
    for (int64_t r = 0; r < n; ++r) {
      const float* h = X + r * ldx;
      __m512 acc = _mm512_setzero_ps();
      for (int j = 0; j < npl; j += 16) {
        const __mmask16 mk = (__mmask16)(in_real - j >= 16 ? 0xFFFFu : in_real > j ? (1u << (in_real - j)) - 1 : 0u);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, h + j), _mm512_loadu_ps(m.w_out.data() + j), acc);
      }
      logit[r] = _mm512_reduce_add_ps(acc) + m.b_out + (wide ? wide[r] : 0.f);
    }
    if (amx) _tile_release();
    return;
  }
  for (int64_t r0 = 0; r0 < n; r0 += mb) {
    const int rows = (int)std::min<int64_t>(mb, n - r0), rpad = (rows + mr - 1) / mr * mr;
    uint16_t* cur = s.a.data();
    uint16_t* nxt = s.b.data();
    to_bf16(X + r0 * ldx, ldx, rows, rpad, in_real, m.layers[l0].kp, cur);
    for (int l = l0; l < L; ++l) {
      const Bf16Layer& ly = m.layers[l];
      const bool last = l == L - 1;
      const int64_t panel = (int64_t)(ly.kp / 2) * 64;
      float* z = (zpre && l == 0) ? zpre + r0 * ldz : nullptr;
      for (int q = 0; q < ly.np / 32; ++q) {
        const uint16_t* W = ly.w.data() + q * panel;
        for (int t = 0; t < rpad; t += mr)
          (amx ? amx_block : tile)(cur + (int64_t)t * ly.kp, ly.kp, W, ly.bias.data() + q * 32, last ? nullptr : nxt + (int64_t)t * ly.np + q * 32,
               last ? s.h.data() + (int64_t)t * npl + q * 32 : nullptr, last ? npl : ly.np, z ? z + t * ldz + q * 32 : nullptr,
               ldz, rows - t, ly.out - q * 32);
      }
      std::swap(cur, nxt);
    }
    for (int r = 0; r < rows; ++r) {
      const float* h = s.h.data() + (int64_t)r * npl;
      __m512 acc = _mm512_setzero_ps();
      for (int j = 0; j < npl; j += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(h + j), _mm512_loadu_ps(m.w_out.data() + j), acc);
      logit[r0 + r] = _mm512_reduce_add_ps(acc) + m.b_out + (wide ? wide[r0 + r] : 0.f);
    }
  }
  if (amx) _tile_release();
}

}  // namespace abacus
