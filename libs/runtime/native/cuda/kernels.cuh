// CUDA kernels of the fused-kernel runtime. One thread group per (sample, slot) bag; float4
// loads when the embedding width is a multiple of 4. Contracts mirror cpu/kernels.h.
// Template kernels are defined here; the others are declared here (with what each does) and
// defined once in kernels.cu, so every source file of the model can launch them.
#pragma once
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace abacus {
namespace k {
// fault injection (debug only): traps, leaving the context with a sticky launch failure
__global__ void trap_kernel(int* never);

// Samples resident on the GPU: numeric [n x N] (model column order), labels, weights (optional),
// per-slot CSR offsets into one concatenated ids array (offs[s * (n + 1) + row]), local ids.
struct DevData {
  int64_t n = 0;
  const float* num = nullptr;
  const float* lab = nullptr;
  const float* wt = nullptr;
  const int64_t* offs = nullptr;
  const int32_t* ids = nullptr;
  int max_bag = 0;  // longest bag (ids per sample and slot) of the whole dataset
};

// Host-streamed batches from window records (common/batch_pack.h) shipped raw (ABACUS_CUDA_UNPACK=
// device), unpacked on the device into the stage layout the step reads, the same bytes the host
// packer writes. Record r starts at word idx[r] of w (the raw stage's records, idx its offsets): its
// slot counts [S], numeric inputs [N], label, weight when hw, then the ids slot after slot.
// unpack_rows writes num, lab, wt and each (slot, row)'s count of ids into cnt[s * (B + 1) + r]
// (cnt[s * (B + 1) + B] = 0); an exclusive scan of cnt gives the offsets (slot after slot, rows in
// order); unpack_ids copies each row's ids to where its offsets say.
__global__ void unpack_rows(const int64_t* __restrict__ idx, const int32_t* __restrict__ w,
                            int64_t B, int N, int S, bool hw, float* __restrict__ num, float* __restrict__ lab,
                            float* __restrict__ wt, int64_t* __restrict__ cnt);
__global__ void unpack_ids(const int64_t* __restrict__ idx, const int32_t* __restrict__ w,
                           int64_t B, int N, int S, bool hw, const int64_t* __restrict__ offs, int32_t* __restrict__ ids);
// A window's slot offsets as built on the host (WindowColumns: int32 [S x (m + 1)], from the window's
// first id) placed where the device holds the window: dst[s * ld + row0 + r] = src[s * (m + 1) + r] + id0.
__global__ void place_offsets(const int32_t* __restrict__ src, int64_t m, int S, int64_t ld, int64_t row0, int64_t id0,
                              int64_t* __restrict__ dst);

struct Layout {
  int N, S, D, ld0;  // numeric, slots, dim, leading dim of H0
  bool mean, wide;
  const int64_t* base;  // per slot first row of the concatenated table
  // inputs switched off (N numeric flags, then S slot flags; never null): a numeric input reads 0
  // after normalising (its mean), a slot an empty bag
  const uint8_t* off;
  // embedding rows offloaded to host memory (a device cache of rows, emb_cache.cu): the cache slot of
  // each table row (-1: not cached; every row a batch reads is cached before its step); null: the
  // table is on the device, row = slot
  const int32_t* map = nullptr;
};

// the table row (or its cache slot) of id `id` of slot s
__device__ __forceinline__ int64_t row_ix(const Layout& L, int s, int32_t id) {
  const int64_t r = L.base[s] + id;
  return L.map ? (int64_t)L.map[r] : r;
}

// begin of a training step: b0 = cursor, cursor += B, ++step, ++step index, zero scalars and wide
__global__ void step_begin(int64_t B, int64_t* cursor, int64_t* b0, int64_t* step, int* step_idx, double* wsum,
                           int* counter, float* wide);

__device__ __forceinline__ int64_t row_of(const int64_t* order, const int64_t* b0p, int64_t b0h, int64_t r) {
  const int64_t b0 = b0p ? *b0p : b0h;
  return order ? order[b0 + r] : b0 + r;
}

// Fused gather: numeric normalisation (+ wide numeric part), labels, weights, and the
// embedding-bag forward of every slot into H0 [B x ld0]; bag scales kept for the backward.
template <int VEC>
__global__ void gather_embed(DevData d, Layout L, const int64_t* order, const int64_t* b0p, int64_t b0h, int64_t B,
                             const float* __restrict__ mean, const float* __restrict__ stdv,
                             const float* __restrict__ table, const float* __restrict__ wtab,
                             const float* __restrict__ wnum, float* __restrict__ H0, float* __restrict__ bagscale,
                             float* __restrict__ wide, float* __restrict__ lab, float* __restrict__ wt, double* wsum,
                             __nv_bfloat16* __restrict__ H0b = nullptr) {
  const int TPB = L.D / VEC;
  const int64_t nbag = B * L.S;
  int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t < nbag * TPB) {
    const int64_t bag = t / TPB;
    const int c = (int)(t - bag * TPB);
    const int64_t r = bag / L.S;
    const int s = (int)(bag - r * L.S);
    const int64_t src = row_of(order, b0p, b0h, r);
    const int64_t* o = d.offs + (int64_t)s * (d.n + 1);
    const int64_t beg = o[src], end = L.off[L.N + s] ? beg : o[src + 1];
    float acc[VEC];
#pragma unroll
    for (int v = 0; v < VEC; ++v) acc[v] = 0.f;
    float wacc = 0.f;
    int cnt = 0;
    if constexpr (VEC == 4) {
      // ids of up to 4 positions first, then their rows: 4 independent 16-byte loads in flight
      // per thread instead of one dependent id->row chain per position (same summation order)
      for (int64_t p = beg; p < end; p += 4) {
        int32_t idv[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) idv[k] = p + k < end ? __ldg(d.ids + p + k) : -1;
        int64_t rx[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) rx[k] = idv[k] >= 0 ? row_ix(L, s, idv[k]) : -1;
        float4 x[4];
#pragma unroll
        for (int k = 0; k < 4; ++k)
          if (idv[k] >= 0) x[k] = __ldg(reinterpret_cast<const float4*>(table + rx[k] * L.D + c * 4));
#pragma unroll
        for (int k = 0; k < 4; ++k)
          if (idv[k] >= 0) {
            ++cnt;
            acc[0] += x[k].x; acc[1] += x[k].y; acc[2] += x[k].z; acc[3] += x[k].w;
            if (L.wide && c == 0) wacc += wtab[rx[k]];
          }
      }
    } else {
      for (int64_t p = beg; p < end; ++p) {
        const int32_t id = d.ids[p];
        if (id < 0) continue;
        ++cnt;
        const int64_t rx = row_ix(L, s, id);
        const float* rowp = table + rx * L.D + c * VEC;
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[v] += rowp[v];
        if (L.wide && c == 0) wacc += wtab[rx];
      }
    }
    const float sc = cnt == 0 ? 0.f : (L.mean ? 1.f / cnt : 1.f);
    const int64_t o0 = r * L.ld0 + L.N + s * L.D + c * VEC;
    if (H0) {
#pragma unroll
      for (int v = 0; v < VEC; ++v) H0[o0 + v] = acc[v] * sc;
    }
    if (H0b) {
#pragma unroll
      for (int v = 0; v < VEC; ++v) H0b[o0 + v] = __float2bfloat16(acc[v] * sc);
    }
    if (c == 0) {
      if (bagscale) bagscale[bag] = sc;
      // per (row, slot): the head sums a row's parts in slot order (the same sum on every run)
      if (L.wide) wide[r * (L.S + 1) + s] = wacc * sc;
    }
    return;
  }
  t -= nbag * TPB;
  if (t >= B) return;
  const int64_t r = t;
  const int64_t src = row_of(order, b0p, b0h, r);
  float w = 0.f;
  float* h = H0 ? H0 + r * L.ld0 : nullptr;
  __nv_bfloat16* hb = H0b ? H0b + r * L.ld0 : nullptr;
  for (int j = 0; j < L.N; ++j) {
    const float v = d.num[src * L.N + j];
    const float x = isfinite(v) && !L.off[j] ? (v - mean[j]) * (1.f / stdv[j]) : 0.f;
    if (h) h[j] = x;
    if (hb) hb[j] = __float2bfloat16(x);
    if (L.wide) w += wnum[j] * x;
  }
  for (int j = L.N + L.S * L.D; j < L.ld0; ++j) {
    if (h) h[j] = 0.f;
    if (hb) hb[j] = __float2bfloat16(0.f);
  }
  if (L.wide) wide[r * (L.S + 1) + L.S] = w;
  lab[r] = d.lab[src];
  const float ww = d.wt ? d.wt[src] : 1.f;
  wt[r] = ww;
  if (d.wt && wsum) atomicAdd(wsum, (double)ww);
}

// Output layer (width 1), logistic loss and its gradient. One warp per sample.
// Training: dlogit[r] = w (sigmoid(z) - y) / sum(w), loss accumulated into losses[*step_idx - 1].
// Prediction: pred_out[b0 + r] = sigmoid(z) (and labels / weights when asked).
__global__ void head(const float* __restrict__ H, int n, int ldh, const float* __restrict__ w, const float* __restrict__ bias,
                     const float* __restrict__ wide, int wstride, const float* __restrict__ dwide, const float* __restrict__ lab,
                     const float* __restrict__ wt, int64_t B, bool has_w, const double* wsum, float* logit, float* dlogit,
                     double* losses, const int* step_idx, float* pred_out, int64_t b0, float* lab_out, float* wt_out);

// Output-layer backward fused with dReLU + bias-grad of the last hidden layer:
// g_w[j] += sum_r H[r,j] dl[r]; g_b += sum dl; dZ[r,j] = H>0 ? dl w[j] : 0 (relu) ; g_bh[j] += sum_r dZ.
// Wide numeric weights: g_wn[j] += sum_r dl[r] H0[r, j].
constexpr int kHeadRows = 64;
// Each block writes its rows' sums to part (block b: part[b * pw ..]: g_w's n, g_bh's n, g_wn's N,
// g_b's 1); head_reduce adds them to the gradients block after block (the same sums on every run).
__global__ void head_backward(const float* __restrict__ H, int n, int ldh, const float* __restrict__ w,
                              const float* __restrict__ dl, int64_t B, bool relu, float* __restrict__ dZ, int lddz,
                              bool bh, const float* H0, int ld0, int N, bool wn, float* part, int pw);
__global__ void head_reduce(const float* __restrict__ part, int blocks, int pw, int n, int N, float* g_w, float* g_bh,
                            float* g_wn, float* g_b);

// dZ *= (H > 0) and g_b[j] += column sums (fallback when cuBLASLt has no DRELU_BGRAD algo)
// as head_backward: block b's bias sums into part[b * n ..], added by head_reduce (g_bh = g_b)
__global__ void drelu_bgrad(float* __restrict__ dZ, const float* __restrict__ H, int64_t B, int n, float* part);

// Sparse backward, phase 1: gradients of every id of every bag summed per table row (atomics into
// G, which is zero outside the batch's rows) and each touched row listed once (flag + counter).
template <int VEC>
__global__ void sparse_accumulate(DevData d, Layout L, const int64_t* order, const int64_t* b0p, int64_t B,
                                  const float* __restrict__ bagscale, const uint8_t* __restrict__ frozen,
                                  const float* __restrict__ demb, int64_t lde, const float* __restrict__ dl,
                                  float* G, float* WG, int32_t* flag, int32_t* touched, int* counter) {
  const int TPB = L.D / VEC;
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= B * L.S * TPB) return;
  const int64_t bag = t / TPB;
  const int c = (int)(t - bag * TPB);
  const int64_t r = bag / L.S;
  const int s = (int)(bag - r * L.S);
  if (frozen[s]) return;
  const float sc = bagscale[bag];
  if (sc == 0.f) return;
  const int64_t src = row_of(order, b0p, 0, r);
  const int64_t* o = d.offs + (int64_t)s * (d.n + 1);
  const int64_t beg = o[src], end = o[src + 1];
  float g[VEC];
  const float* gp = demb + r * lde + s * L.D + c * VEC;
#pragma unroll
  for (int v = 0; v < VEC; ++v) g[v] = gp[v] * sc;
  const float gw = (L.wide && c == 0) ? dl[r] * sc : 0.f;
  for (int64_t p = beg; p < end; ++p) {
    const int32_t id = d.ids[p];
    if (id < 0) continue;
    const int64_t row = row_ix(L, s, id);
    float* dst = G + row * L.D + c * VEC;
#pragma unroll
    for (int v = 0; v < VEC; ++v) atomicAdd(dst + v, g[v]);
    if (c == 0) {
      if (L.wide) atomicAdd(&WG[row], gw);
      if (atomicExch(&flag[row], 1) == 0) touched[atomicAdd(counter, 1)] = (int32_t)row;
    }
  }
}

struct SparseParams {
  int kind;  // 0 adagrad, 1 adam
  float lr, b1, b2, eps;
};

// Sparse backward, phase 2: each touched row updated once (Adagrad / Adam), then its gradient
// and flag cleared. Grid-stride over the device-side count, so the launch shape is fixed.
__global__ void sparse_update(int D, const int32_t* touched, const int* counter, const int64_t* step, SparseParams o,
                              float* table, float* m, float* v, float* G, float* wtab, float* wm, float* wv, float* WG,
                              int32_t* flag);

// Sparse backward without atomics (default path). Phase 1: every (bag, k-th id) position of the
// batch writes key = table row (or `sentinel` for padding / frozen slots / k past the bag's end)
// and value = its position bag * max_bag + k. The pairs are then sorted by key (CUB radix sort,
// stable, so equal rows keep position order: the summation order is deterministic).
__global__ void sparse_emit(DevData d, Layout L, const int64_t* order, const int64_t* b0p, int64_t B, int maxbag,
                            const uint8_t* __restrict__ frozen, uint32_t sentinel, uint32_t* __restrict__ keys,
                            int32_t* __restrict__ vals);

// Phase 2a: one warp per chunk of 32 sorted positions: the gradient of the chunk's entries that hold
// its first entry's row (D values in lead[chunk * D ..], the wide part in leadw[chunk]), summed by a
// fixed shuffle tree. A row in hundreds of a batch's entries (a categorical with few values) spans
// many chunks; its head then adds their leads instead of walking every entry.
__global__ void sparse_chunk_lead(const uint32_t* __restrict__ keys, const int32_t* __restrict__ vals, int64_t n,
                                  uint32_t sentinel, int maxbag, int S, int D, const float* __restrict__ demb,
                                  int64_t lde, const float* __restrict__ bagscale, const float* __restrict__ dl,
                                  bool wide, float* __restrict__ lead, float* __restrict__ leadw);
// Phase 2b: one warp per 32 sorted positions; each run of equal keys starting inside it (a unique
// row) is summed in registers (within the chunk; past it, the later chunks' leads) and the row's
// optimizer step applied once (lane = one dim, so the row's table / m / v reads and writes are
// coalesced 4*D-byte segments). No gradient table.
__global__ void sparse_apply(const uint32_t* __restrict__ keys, const int32_t* __restrict__ vals, int64_t n,
                             uint32_t sentinel, int maxbag, int S, int D, const float* __restrict__ demb, int64_t lde,
                             const float* __restrict__ bagscale, const float* __restrict__ dl, bool wide,
                             const int64_t* step, SparseParams o, float* __restrict__ table, float* __restrict__ m,
                             float* __restrict__ v, float* __restrict__ wtab, float* __restrict__ wm,
                             float* __restrict__ wv, const float* __restrict__ lead, const float* __restrict__ leadw);

struct DenseParams {
  float lr, b1, b2, eps, wd;
};
// Dense Adam over all dense parameters in one kernel; consumes (zeroes) the gradient.
__global__ void dense_adam(float* w, float* g, float* m, float* v, int64_t n, const int64_t* step, DenseParams o);

__global__ void relu_copy(const float* z, float* h, int64_t n);

// Ablation: the change of a group's inputs when its rows are taken from perm[b0 + r]:
// delta[r, k] (k over the group's numeric columns, then slot x dim), and the wide change.
// FP32 -> BF16 (weights of the BF16 evaluation forward, a ReLU'd first layer)
__global__ void to_bf16(const float* __restrict__ x, __nv_bfloat16* __restrict__ y, int64_t n, bool relu);

// Ablation, one configuration: H1b[r, j] = bf16(relu(zbase[r, j] + sum_k Wg[k, j] * delta[r, k])) for
// h1 outputs (h1 % 4 == 0) and a group of gw inputs (Wg column-major h1 x gw, delta [B x gw]). One pass
// over zbase and H1 (memory-bound); the group's weights and a tile of deltas in shared memory. Each
// thread owns 4 consecutive outputs of a row (one 16-byte zbase load, one 8-byte BF16 store),
// blockDim / (h1 / 4) rows at a time, 4 row steps unrolled so several loads are in flight per thread.
constexpr int kAblRows = 64;
__global__ void ablation_update_bf16_v4(const float* __restrict__ zbase, const float* __restrict__ Wg,
                                        const float* __restrict__ delta, int64_t B, int h1, int gw,
                                        __nv_bfloat16* __restrict__ H1b);

// Same with the group's weights in registers (GW inputs known at compile time, e.g. one slot of
// dimension 16): shared memory then holds only the block's deltas, so it is not re-read per row.
constexpr int kAblRowsReg = 128;
template <int GW>
__global__ void __launch_bounds__(256) ablation_update_bf16_reg(const float* __restrict__ zbase, const float* __restrict__ Wg,
                                                                const float* __restrict__ delta, int64_t B, int h1,
                                                                __nv_bfloat16* __restrict__ H1b) {
  __shared__ float Ds[kAblRowsReg * GW];
  const int64_t r0 = (int64_t)blockIdx.x * kAblRowsReg;
  const int rows = (int)(B - r0 < kAblRowsReg ? B - r0 : kAblRowsReg);
  for (int i = threadIdx.x; i < rows * GW; i += blockDim.x) Ds[i] = delta[r0 * GW + i];
  const int q = h1 / 4;
  const int lanes = blockDim.x / q;
  const int tj = threadIdx.x % q, tr = threadIdx.x / q;
  float4 w[GW];
  if (tr < lanes) {
#pragma unroll
    for (int k = 0; k < GW; ++k) w[k] = __ldg(reinterpret_cast<const float4*>(Wg + (int64_t)k * h1) + tj);
  }
  __syncthreads();
  if (tr >= lanes) return;
#pragma unroll 4
  for (int rr = tr; rr < rows; rr += lanes) {
    float4 a = __ldg(reinterpret_cast<const float4*>(zbase + (r0 + rr) * h1) + tj);
    const float* dr = Ds + rr * GW;
#pragma unroll
    for (int k = 0; k < GW; ++k) {
      const float dk = dr[k];
      a.x = fmaf(w[k].x, dk, a.x); a.y = fmaf(w[k].y, dk, a.y); a.z = fmaf(w[k].z, dk, a.z); a.w = fmaf(w[k].w, dk, a.w);
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
                               float* dwide);

}  // namespace k
}  // namespace abacus
