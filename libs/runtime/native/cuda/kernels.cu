// Definitions of the non-template kernels declared, and described, in kernels.cuh.
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels.cuh"

namespace abacus {
namespace k {

__global__ void trap_kernel(int* never) {
  if (never == nullptr) __trap();
  else *never = 1;
}


__global__ void step_begin(int64_t B, int64_t* cursor, int64_t* b0, int64_t* step, int* step_idx, double* wsum,
                           int* counter, float* wide) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i == 0) {
    *b0 = *cursor;
    *cursor += B;
    *step += 1;
    *step_idx += 1;
    *wsum = 0;
    *counter = 0;
  }
  if (wide && i < B) wide[i] = 0.f;
}

__global__ void head(const float* __restrict__ H, int n, int ldh, const float* __restrict__ w, const float* __restrict__ bias,
                     const float* __restrict__ wide, int wstride, const float* __restrict__ dwide, const float* __restrict__ lab,
                     const float* __restrict__ wt, int64_t B, bool has_w, const double* wsum, float* logit, float* dlogit,
                     double* losses, const int* step_idx, float* pred_out, int64_t b0, float* lab_out, float* wt_out) {
  const int lane = threadIdx.x & 31;
  const int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  __shared__ double part[32];
  double lv = 0;
  if (r < B) {
    const float* h = H + r * ldh;
    float s = 0.f;
    for (int j = lane; j < n; j += 32) s += h[j] * w[j];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    float wsum_r = 0.f;
    if (wide)
      for (int q = 0; q < wstride; ++q) wsum_r += wide[r * wstride + q];
    const float z = s + bias[0] + wsum_r + (dwide ? dwide[r] : 0.f);
    if (lane == 0) {
      if (logit) logit[r] = z;
      const float y = lab[r], ww = wt[r];
      if (dlogit) {
        double tot = has_w ? *wsum : (double)B;
        if (tot <= 0) tot = 1;
        const float inv = (float)(1.0 / tot);
        const float sg = 1.f / (1.f + expf(-z));
        dlogit[r] = ww * (sg - y) * inv;
        lv = ww * (fmaxf(z, 0.f) - z * y + log1pf(expf(-fabsf(z)))) / tot;
      }
      if (pred_out) pred_out[b0 + r] = 1.f / (1.f + expf(-z));
      if (lab_out) lab_out[b0 + r] = y;
      if (wt_out) wt_out[b0 + r] = ww;
    }
  }
  if (losses) {
    const int wid = threadIdx.x >> 5;
    if (lane == 0) part[wid] = lv;
    __syncthreads();
    if (threadIdx.x == 0) {
      double s = 0;
      for (int i = 0; i < (int)(blockDim.x >> 5); ++i) s += part[i];
      atomicAdd(&losses[*step_idx - 1], s);
    }
  }
}

__global__ void head_backward(const float* __restrict__ H, int n, int ldh, const float* __restrict__ w,
                              const float* __restrict__ dl, int64_t B, bool relu, float* __restrict__ dZ, int lddz,
                              bool bh, const float* H0, int ld0, int N, bool wn, float* part, int pw) {
  const int64_t r0 = blockIdx.x * (int64_t)kHeadRows;
  const int64_t r1 = min(B, r0 + kHeadRows);
  float* out = part + (int64_t)blockIdx.x * pw;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const float wj = w[j];
    float aw = 0.f, ab = 0.f;
    for (int64_t r = r0; r < r1; ++r) {
      const float h = H[r * ldh + j], d = dl[r];
      aw += h * d;
      const float dz = (!relu || h > 0.f) ? d * wj : 0.f;
      dZ[r * lddz + j] = dz;
      ab += dz;
    }
    out[j] = aw;
    if (bh) out[n + j] = ab;
  }
  if (wn)
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
      float a = 0.f;
      for (int64_t r = r0; r < r1; ++r) a += dl[r] * H0[r * ld0 + j];
      out[2 * n + j] = a;
    }
  if (threadIdx.x == 0) {
    float a = 0.f;
    for (int64_t r = r0; r < r1; ++r) a += dl[r];
    out[2 * n + N] = a;
  }
}

__global__ void head_reduce(const float* __restrict__ part, int blocks, int pw, int n, int N, float* g_w, float* g_bh,
                            float* g_wn, float* g_b) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  float* g = nullptr;
  int at = j;
  if (j < n) g = g_w ? g_w + j : nullptr;
  else if (j < 2 * n) g = g_bh ? g_bh + (j - n) : nullptr;
  else if (j < 2 * n + N) g = g_wn ? g_wn + (j - 2 * n) : nullptr;
  else if (j == 2 * n + N) g = g_b;
  else return;
  if (!g) return;
  float a = 0.f;
  for (int b = 0; b < blocks; ++b) a += part[(int64_t)b * pw + at];
  *g += a;
}

__global__ void drelu_bgrad(float* __restrict__ dZ, const float* __restrict__ H, int64_t B, int n, float* part) {
  const int64_t r0 = blockIdx.x * (int64_t)kHeadRows;
  const int64_t r1 = min(B, r0 + kHeadRows);
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    float ab = 0.f;
    for (int64_t r = r0; r < r1; ++r) {
      float v = H[r * n + j] > 0.f ? dZ[r * n + j] : 0.f;
      dZ[r * n + j] = v;
      ab += v;
    }
    part[(int64_t)blockIdx.x * n + j] = ab;
  }
}

__global__ void sparse_update(int D, const int32_t* touched, const int* counter, const int64_t* step, SparseParams o,
                              float* table, float* m, float* v, float* G, float* wtab, float* wm, float* wv, float* WG,
                              int32_t* flag) {
  const int64_t total = (int64_t)(*counter) * D;
  const float bc1 = 1.f - powf(o.b1, (float)*step), bc2 = 1.f - powf(o.b2, (float)*step);
  const float step_size = o.lr / bc1, inv_sqrt_bc2 = 1.f / sqrtf(bc2);
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
    const int64_t u = t / D;
    const int dd = (int)(t - u * D);
    const int64_t row = touched[u];
    const int64_t i = row * D + dd;
    const float g = G[i];
    G[i] = 0.f;
    if (o.kind == 0) {
      m[i] += g * g;
      table[i] -= o.lr * g / (sqrtf(m[i]) + o.eps);
    } else {
      m[i] = o.b1 * m[i] + (1.f - o.b1) * g;
      v[i] = o.b2 * v[i] + (1.f - o.b2) * g * g;
      table[i] -= step_size * m[i] / (sqrtf(v[i]) * inv_sqrt_bc2 + o.eps);
    }
    if (dd == 0) {
      if (wtab) {
        const float gw = WG[row];
        WG[row] = 0.f;
        if (o.kind == 0) {
          wm[row] += gw * gw;
          wtab[row] -= o.lr * gw / (sqrtf(wm[row]) + o.eps);
        } else {
          wm[row] = o.b1 * wm[row] + (1.f - o.b1) * gw;
          wv[row] = o.b2 * wv[row] + (1.f - o.b2) * gw * gw;
          wtab[row] -= step_size * wm[row] / (sqrtf(wv[row]) * inv_sqrt_bc2 + o.eps);
        }
      }
      flag[row] = 0;
    }
  }
}

__global__ void sparse_emit(DevData d, Layout L, const int64_t* order, const int64_t* b0p, int64_t B, int maxbag,
                            const uint8_t* __restrict__ frozen, uint32_t sentinel, uint32_t* __restrict__ keys,
                            int32_t* __restrict__ vals) {
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= B * L.S * maxbag) return;
  const int64_t bag = t / maxbag;
  const int k = (int)(t - bag * maxbag);
  const int64_t r = bag / L.S;
  const int s = (int)(bag - r * L.S);
  uint32_t key = sentinel;
  if (!frozen[s] && !L.off[L.N + s]) {
    const int64_t src = row_of(order, b0p, 0, r);
    const int64_t* o = d.offs + (int64_t)s * (d.n + 1);
    const int64_t p = o[src] + k;
    if (p < o[src + 1]) {
      const int32_t id = d.ids[p];
      if (id >= 0) key = (uint32_t)row_ix(L, s, id);
    }
  }
  keys[t] = key;
  vals[t] = (int32_t)t;
}

__global__ void sparse_chunk_lead(const uint32_t* __restrict__ keys, const int32_t* __restrict__ vals, int64_t n,
                                  uint32_t sentinel, int maxbag, int S, int D, const float* __restrict__ demb,
                                  int64_t lde, const float* __restrict__ bagscale, const float* __restrict__ dl,
                                  bool wide, float* __restrict__ lead, float* __restrict__ leadw) {
  const int lane = threadIdx.x & 31;
  const int64_t c = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  const int64_t i0 = c * 32;
  if (i0 >= n) return;
  const int64_t i = i0 + lane;
  const uint32_t first = keys[i0];
  // the entries of the chunk's first row: contiguous from its first lane (the keys are sorted)
  const bool in = first != sentinel && i < n && keys[i] == first;
  int64_t r = 0;
  int s = 0;
  float sc = 0.f;
  if (in) {
    const int32_t p = vals[i];
    const int bag = p / maxbag;
    r = bag / S;
    s = bag - (int)r * S;
    sc = bagscale[bag];
  }
  for (int dd = 0; dd < D; ++dd) {
    float g = in ? demb[r * lde + s * D + dd] * sc : 0.f;
    for (int off = 16; off; off >>= 1) g += __shfl_down_sync(0xffffffffu, g, off);
    if (lane == 0) lead[c * D + dd] = g;
  }
  if (wide) {
    float gw = in ? dl[r] * sc : 0.f;
    for (int off = 16; off; off >>= 1) gw += __shfl_down_sync(0xffffffffu, gw, off);
    if (lane == 0) leadw[c] = gw;
  }
}

__global__ void sparse_apply(const uint32_t* __restrict__ keys, const int32_t* __restrict__ vals, int64_t n,
                             uint32_t sentinel, int maxbag, int S, int D, const float* __restrict__ demb, int64_t lde,
                             const float* __restrict__ bagscale, const float* __restrict__ dl, bool wide,
                             const int64_t* step, SparseParams o, float* __restrict__ table, float* __restrict__ m,
                             float* __restrict__ v, float* __restrict__ wtab, float* __restrict__ wm,
                             float* __restrict__ wv, const float* __restrict__ lead, const float* __restrict__ leadw) {
  const int lane = threadIdx.x & 31;
  const int64_t i0 = ((blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5) * 32;
  if (i0 >= n) return;
  // without leads (ABACUS_CUDA_SPARSE_LEADS=0): each head walks its whole run, as before them
  const int64_t cend = lead && i0 + 32 < n ? i0 + 32 : n;
  const int64_t i = i0 + lane;
  const uint32_t k = i < n ? keys[i] : sentinel;
  const bool head = k != sentinel && (i == 0 || keys[i - 1] != k);
  const unsigned mask = __ballot_sync(0xffffffffu, head);
  if (!mask) return;
  const float bc1 = 1.f - powf(o.b1, (float)*step), bc2 = 1.f - powf(o.b2, (float)*step);
  const float step_size = o.lr / bc1, inv_sqrt_bc2 = 1.f / sqrtf(bc2);
  const int nh = __popc(mask);
  for (int t = lane; t < nh * D; t += 32) {
    const int h = t / D, dd = t - h * D;
    unsigned mm = mask;
    for (int q = 0; q < h; ++q) mm &= mm - 1;
    const int64_t hi = i0 + (__ffs(mm) - 1);
    const uint32_t row = keys[hi];
    float g = 0.f, gw = 0.f;
    // the run within this chunk one entry at a time, then (a run that goes on) each later chunk's
    // part of it as that chunk's lead, summed there in a fixed order: a popular row's hundreds of
    // entries are not summed by one thread, and the sum is the same on every run
    int64_t j = hi;
    for (; j < cend && keys[j] == row; ++j) {
      const int32_t p = vals[j];
      const int bag = p / maxbag;
      const int r = bag / S, s = bag - r * S;
      const float sc = bagscale[bag];
      g += demb[(int64_t)r * lde + s * D + dd] * sc;
      if (wide && dd == 0) gw += dl[r] * sc;
    }
    if (lead && j == cend)
      for (int64_t c = cend >> 5; (c << 5) < n && keys[c << 5] == row; ++c) {
        g += lead[c * D + dd];
        if (wide && dd == 0) gw += leadw[c];
      }
    const int64_t ix = (int64_t)row * D + dd;
    if (o.kind == 0) {
      const float a = m[ix] + g * g;
      m[ix] = a;
      table[ix] -= o.lr * g / (sqrtf(a) + o.eps);
    } else {
      const float mi = o.b1 * m[ix] + (1.f - o.b1) * g;
      const float vi = o.b2 * v[ix] + (1.f - o.b2) * g * g;
      m[ix] = mi;
      v[ix] = vi;
      table[ix] -= step_size * mi / (sqrtf(vi) * inv_sqrt_bc2 + o.eps);
    }
    if (wide && dd == 0) {
      if (o.kind == 0) {
        const float a = wm[row] + gw * gw;
        wm[row] = a;
        wtab[row] -= o.lr * gw / (sqrtf(a) + o.eps);
      } else {
        const float mi = o.b1 * wm[row] + (1.f - o.b1) * gw;
        const float vi = o.b2 * wv[row] + (1.f - o.b2) * gw * gw;
        wm[row] = mi;
        wv[row] = vi;
        wtab[row] -= step_size * mi / (sqrtf(vi) * inv_sqrt_bc2 + o.eps);
      }
    }
  }
}

__global__ void dense_adam(float* w, float* g, float* m, float* v, int64_t n, const int64_t* step, DenseParams o) {
  const float bc1 = 1.f - powf(o.b1, (float)*step), bc2 = 1.f - powf(o.b2, (float)*step);
  const float step_size = o.lr / bc1, sqrt_bc2 = sqrtf(bc2);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float gi = g[i] + o.wd * w[i];
    g[i] = 0.f;
    m[i] = o.b1 * m[i] + (1.f - o.b1) * gi;
    v[i] = o.b2 * v[i] + (1.f - o.b2) * gi * gi;
    w[i] -= step_size * m[i] / (sqrtf(v[i]) / sqrt_bc2 + o.eps);
  }
}

__global__ void relu_copy(const float* z, float* h, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    h[i] = fmaxf(z[i], 0.f);
}

__global__ void to_bf16(const float* __restrict__ x, __nv_bfloat16* __restrict__ y, int64_t n, bool relu) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = x[i];
    y[i] = __float2bfloat16(relu ? fmaxf(v, 0.f) : v);
  }
}

__global__ void ablation_update_bf16_v4(const float* __restrict__ zbase, const float* __restrict__ Wg,
                                        const float* __restrict__ delta, int64_t B, int h1, int gw,
                                        __nv_bfloat16* __restrict__ H1b) {
  extern __shared__ float sm[];
  float* Ws = sm;
  float* Ds = sm + (int64_t)h1 * gw;
  for (int i = threadIdx.x; i < h1 * gw; i += blockDim.x) Ws[i] = Wg[i];
  const int64_t r0 = (int64_t)blockIdx.x * kAblRows;
  const int rows = (int)(B - r0 < kAblRows ? B - r0 : kAblRows);
  for (int i = threadIdx.x; i < rows * gw; i += blockDim.x) Ds[i] = delta[r0 * gw + i];
  __syncthreads();
  const int q = h1 / 4;                       // column groups per row
  const int lanes = blockDim.x / q;           // rows per step
  const int tj = threadIdx.x % q, tr = threadIdx.x / q;
  if (tr >= lanes) return;
  const float4* W4 = reinterpret_cast<const float4*>(Ws);
#pragma unroll 4
  for (int rr = tr; rr < rows; rr += lanes) {
    float4 a = *reinterpret_cast<const float4*>(zbase + (r0 + rr) * h1 + 4 * tj);
    const float* dr = Ds + rr * gw;
    for (int k = 0; k < gw; ++k) {
      const float dk = dr[k];
      const float4 w = W4[k * q + tj];
      a.x = fmaf(w.x, dk, a.x); a.y = fmaf(w.y, dk, a.y); a.z = fmaf(w.z, dk, a.z); a.w = fmaf(w.w, dk, a.w);
    }
    __nv_bfloat162 lo = __floats2bfloat162_rn(fmaxf(a.x, 0.f), fmaxf(a.y, 0.f));
    __nv_bfloat162 hi = __floats2bfloat162_rn(fmaxf(a.z, 0.f), fmaxf(a.w, 0.f));
    uint2 pk;
    pk.x = *reinterpret_cast<uint32_t*>(&lo);
    pk.y = *reinterpret_cast<uint32_t*>(&hi);
    *reinterpret_cast<uint2*>(H1b + (r0 + rr) * h1 + 4 * tj) = pk;
  }
}

__global__ void ablation_delta(DevData d, Layout L, const int32_t* perm, int64_t b0, int64_t B, const float* mean,
                               const float* stdv, const float* table, const float* wtab, const float* wnum,
                               const float* H0, const int* gnum, int nnum, const int* gslot, int nslot, float* delta,
                               float* dwide) {
  const int gw = nnum + nslot * L.D;
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= B * gw) return;
  const int64_t r = t / gw;
  const int k = (int)(t - r * gw);
  const int64_t src = perm[b0 + r];
  if (k < nnum) {
    const int j = gnum[k];
    const float v = d.num[src * L.N + j];
    const float x = isfinite(v) ? (v - mean[j]) * (1.f / stdv[j]) : 0.f;
    const float xb = H0[r * L.ld0 + j];
    delta[r * gw + k] = x - xb;
    if (L.wide) atomicAdd(&dwide[r], wnum[j] * (x - xb));
    return;
  }
  const int q = (k - nnum) / L.D, dd = (k - nnum) - q * L.D;
  const int s = gslot[q];
  const int64_t* o = d.offs + (int64_t)s * (d.n + 1);
  float acc = 0.f, wacc = 0.f;
  int cnt = 0;
  for (int64_t p = o[src]; p < o[src + 1]; ++p) {
    const int32_t id = d.ids[p];
    if (id < 0) continue;
    ++cnt;
    acc += table[row_ix(L, s, id) * L.D + dd];
    if (L.wide && dd == 0) wacc += wtab[row_ix(L, s, id)];
  }
  const float sc = cnt == 0 ? 0.f : (L.mean ? 1.f / cnt : 1.f);
  delta[r * gw + k] = acc * sc - H0[r * L.ld0 + L.N + s * L.D + dd];
  if (L.wide && dd == 0) {
    // base wide part of this slot for row b0 + r
    const int64_t* ob = o;
    const int64_t rb = b0 + r;
    float bw = 0.f;
    int bc = 0;
    for (int64_t p = ob[rb]; p < ob[rb + 1]; ++p) {
      const int32_t id = d.ids[p];
      if (id < 0) continue;
      ++bc;
      bw += wtab[row_ix(L, s, id)];
    }
    const float bsc = bc == 0 ? 0.f : (L.mean ? 1.f / bc : 1.f);
    atomicAdd(&dwide[r], wacc * sc - bw * bsc);
  }
}


__global__ void unpack_rows(const int64_t* __restrict__ idx, const int32_t* __restrict__ w,
                            int64_t B, int N, int S, bool hw, float* __restrict__ num, float* __restrict__ lab,
                            float* __restrict__ wt, int64_t* __restrict__ cnt) {
  // one thread per (row, word of its head): heads are short, rows many
  const int head = S + N + 1 + (hw ? 1 : 0);
  const int64_t total = B * head;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / head;
    const int c = (int)(i - r * head);
    const int32_t v = w[idx[r] + c];
    if (c < S) {
      cnt[(int64_t)c * (B + 1) + r] = v;
      if (r == 0) cnt[(int64_t)c * (B + 1) + B] = 0;
    } else if (c < S + N) {
      num[r * N + (c - S)] = __int_as_float(v);
    } else if (c == S + N) {
      lab[r] = __int_as_float(v);
    } else {
      wt[r] = __int_as_float(v);
    }
  }
}

__global__ void unpack_ids(const int64_t* __restrict__ idx, const int32_t* __restrict__ w,
                           int64_t B, int N, int S, bool hw, const int64_t* __restrict__ offs, int32_t* __restrict__ ids) {
  const int head = S + N + 1 + (hw ? 1 : 0);
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < B; r += (int64_t)gridDim.x * blockDim.x) {
    const int32_t* rec = w + idx[r];
    const int32_t* id = rec + head;
    for (int s = 0; s < S; ++s) {
      int32_t* dst = ids + offs[(int64_t)s * (B + 1) + r];
      const int32_t c = rec[s];
      for (int32_t q = 0; q < c; ++q) dst[q] = id[q];
      id += c;
    }
  }
}

__global__ void place_offsets(const int32_t* __restrict__ src, int64_t m, int S, int64_t ld, int64_t row0, int64_t id0,
                              int64_t* __restrict__ dst) {
  const int64_t n = (int64_t)S * (m + 1);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t s = i / (m + 1), r = i - s * (m + 1);
    dst[s * ld + row0 + r] = (int64_t)src[i] + id0;
  }
}

}  // namespace k
}  // namespace abacus
