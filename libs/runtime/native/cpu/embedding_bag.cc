// One embedding-bag kernel over the concatenated table for all slots (forward), and the backward
// fused with the sparse optimizer so only rows present in the batch are read and written.
#include <atomic>
#include <cmath>
#include <cstring>

#include "kernels.h"

namespace abacus {

namespace {
template <int D>
inline void add_row(float* __restrict dst, const float* __restrict src, int) {
#pragma GCC unroll 64
  for (int k = 0; k < D; ++k) dst[k] += src[k];
}
template <>
inline void add_row<0>(float* __restrict dst, const float* __restrict src, int dim) {
  for (int k = 0; k < dim; ++k) dst[k] += src[k];
}

template <int D>
bool forward_impl(ThreadPool& pool, const DataSource& ds, const EmbeddingLayout& L, const float* table,
                  const float* wide_table, const std::vector<int>& slots, const std::vector<const int64_t*>& src_rows,
                  int64_t B, float* out, int64_t ldo, int col0, BagRef* bags, float* wide_out, int64_t* bad_id,
                  int* bad_slot) {
  const int dim = D ? D : L.dim;
  const int ns = (int)slots.size();
  std::atomic<bool> bad{false};
  pool.run([&](int t) {
    int64_t rb, re;
    ThreadPool::range(B, t, pool.size(), rb, re);
    constexpr int64_t kAhead = 4;  // prefetch the rows of sample r + kAhead: lookups are latency-bound
    for (int64_t r = rb; r < re; ++r) {
      if (r + kAhead < re) {
        for (int k = 0; k < ns; ++k) {
          const int s = slots[k];
          int64_t local;
          const DataPart& part = ds.locate(src_rows[k][r + kAhead], local);
          const int32_t o0 = part.offs[s][local], o1 = part.offs[s][local + 1];
          const int32_t* ids = part.ids[s];
          for (int32_t p = o0; p < o1; ++p)
            if (ids[p] >= 0 && ids[p] < L.vocab[s]) __builtin_prefetch(table + (L.base[s] + ids[p]) * dim);
        }
      }
      float wsum_all = 0.f;
      for (int k = 0; k < ns; ++k) {
        const int s = slots[k];
        int64_t local;
        const DataPart& part = ds.locate(src_rows[k][r], local);
        const int32_t* offs = part.offs[s];
        const int32_t o0 = offs[local], o1 = offs[local + 1];
        const int32_t* ids = part.ids[s] + o0;
        const int32_t len = L.off && L.off[s] ? 0 : o1 - o0;
        float* dst = out + r * ldo + col0 + (int64_t)k * dim;
        std::memset(dst, 0, sizeof(float) * dim);
        const int64_t base = L.base[s], vocab = L.vocab[s];
        int cnt = 0;
        float wsum = 0.f;
        for (int32_t p = 0; p < len; ++p) {
          if (p + 1 < len && ids[p + 1] >= 0 && ids[p + 1] < vocab) __builtin_prefetch(table + (base + ids[p + 1]) * dim);
          const int32_t id = ids[p];
          if (id < 0) continue;  // padding
          if (id >= vocab) {
            if (!bad.exchange(true)) { *bad_id = id; *bad_slot = s; }
            continue;
          }
          const int64_t row = base + id;
          add_row<D>(dst, table + row * dim, dim);
          if (wide_table) wsum += wide_table[row];
          ++cnt;
        }
        const float scale = L.mean ? (cnt ? 1.f / cnt : 0.f) : (cnt ? 1.f : 0.f);
        if (L.mean && cnt > 1)
          for (int d = 0; d < dim; ++d) dst[d] *= scale;
        wsum_all += wsum * scale;
        if (bags) bags[r * ns + k] = BagRef{ids, len, scale};
      }
      if (wide_out) wide_out[r] += wsum_all;
    }
  });
  return !bad.load();
}
}  // namespace

bool embedding_bag_forward(ThreadPool& pool, const DataSource& ds, const EmbeddingLayout& L, const float* table,
                           const float* wide_table, const std::vector<int>& slots,
                           const std::vector<const int64_t*>& src_rows, int64_t B, float* out, int64_t ldo, int col0,
                           BagRef* bags, float* wide_out, int64_t* bad_id, int* bad_slot) {
  switch (L.dim) {
    case 8: return forward_impl<8>(pool, ds, L, table, wide_table, slots, src_rows, B, out, ldo, col0, bags, wide_out, bad_id, bad_slot);
    case 16: return forward_impl<16>(pool, ds, L, table, wide_table, slots, src_rows, B, out, ldo, col0, bags, wide_out, bad_id, bad_slot);
    case 32: return forward_impl<32>(pool, ds, L, table, wide_table, slots, src_rows, B, out, ldo, col0, bags, wide_out, bad_id, bad_slot);
    case 64: return forward_impl<64>(pool, ds, L, table, wide_table, slots, src_rows, B, out, ldo, col0, bags, wide_out, bad_id, bad_slot);
    default: return forward_impl<0>(pool, ds, L, table, wide_table, slots, src_rows, B, out, ldo, col0, bags, wide_out, bad_id, bad_slot);
  }
}

void embedding_bag_backward_update(ThreadPool& pool, const EmbeddingLayout& L, const BagRef* bags, int S,
                                   const std::vector<uint8_t>& frozen, int64_t B, const float* d_emb, int64_t ld_demb,
                                   const float* d_logit, float* table, float* wide_table, SparseState emb_state,
                                   SparseState wide_state, const SparseOpt& opt, int64_t step, SparseBackwardScratch& sc,
                                   float* capture_emb, float* capture_wide) {
  const int T = pool.size();
  const int dim = L.dim;
  int64_t total_rows = L.base.empty() ? 0 : L.base.back() + L.vocab.back();
  if ((int64_t)sc.row_map.size() != total_rows) sc.row_map.assign(total_rows, -1);
  sc.uniq.resize(T);
  sc.grad.resize(T);
  sc.wgrad.resize(T);
  const float bc1 = 1.f - std::pow(opt.b1, (float)step), bc2 = 1.f - std::pow(opt.b2, (float)step);
  int32_t* row_map = sc.row_map.data();
  pool.run([&](int t) {
    auto& uq = sc.uniq[t];
    auto& g = sc.grad[t];
    auto& wg = sc.wgrad[t];
    uq.clear();
    for (int64_t r = 0; r < B; ++r) {
      const float dl = d_logit ? d_logit[r] : 0.f;
      for (int s = 0; s < S; ++s) {
        if (frozen[s]) continue;
        const BagRef& bag = bags[r * S + s];
        if (bag.scale == 0.f) continue;
        const float* dptr = d_emb + r * ld_demb + (int64_t)s * dim;
        const int64_t base = L.base[s], vocab = L.vocab[s];
        for (int32_t p = 0; p < bag.len; ++p) {
          const int32_t id = bag.ids[p];
          if (id < 0 || id >= vocab) continue;
          const int64_t row = base + id;
          if (row % T != t) continue;
          int32_t u = row_map[row];
          if (u < 0) {
            u = (int32_t)uq.size();
            row_map[row] = u;
            uq.push_back(row);
            if (g.size() < uq.size() * dim) { g.resize(uq.size() * dim * 2); wg.resize(uq.size() * 2); }
            std::memset(g.data() + (size_t)u * dim, 0, sizeof(float) * dim);
            wg[u] = 0.f;
          }
          float* gu = g.data() + (size_t)u * dim;
          for (int d = 0; d < dim; ++d) gu[d] += dptr[d] * bag.scale;
          wg[u] += dl * bag.scale;
        }
      }
    }
    const SparseRowStep stepper(opt, bc1, bc2);
    const bool adam = opt.kind == 1;
    for (size_t u = 0; u < uq.size(); ++u) {
      const int64_t row = uq[u];
      const float* gu = g.data() + u * dim;
      if (u + 8 < uq.size() && !capture_emb) {
        const int64_t ahead = uq[u + 8];
        __builtin_prefetch(table + ahead * dim, 1);
        __builtin_prefetch(emb_state.m + ahead * dim, 1);
        if (adam) __builtin_prefetch(emb_state.v + ahead * dim, 1);
      }
      if (capture_emb) {
        std::memcpy(capture_emb + row * dim, gu, sizeof(float) * dim);
        if (capture_wide) capture_wide[row] = wg[u];
      } else {
        float* vrow = emb_state.v ? emb_state.v + row * dim : nullptr;
        if (dim == 16) stepper.apply<16>(table + row * dim, gu, emb_state.m + row * dim, vrow, dim);
        else if (dim == 8) stepper.apply<8>(table + row * dim, gu, emb_state.m + row * dim, vrow, dim);
        else if (dim == 32) stepper.apply<32>(table + row * dim, gu, emb_state.m + row * dim, vrow, dim);
        else stepper.apply<0>(table + row * dim, gu, emb_state.m + row * dim, vrow, dim);
        if (wide_table)
          stepper.apply<1>(wide_table + row, &wg[u], wide_state.m + row, wide_state.v ? wide_state.v + row : nullptr, 1);
      }
      row_map[row] = -1;
    }
  });
}

}  // namespace abacus
