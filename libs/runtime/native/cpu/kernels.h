// CPU kernel families used by CpuModel. Each is a free function over raw buffers so a later CUDA
// backend can mirror the same contracts.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "../common/data_source.h"
#include "../common/thread_pool.h"

namespace abacus {

struct SparseOpt {
  int kind = 1;  // 0 adagrad, 1 adam
  float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, init_acc = 0.f;
};
struct DenseOpt {
  float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, weight_decay = 0.f;
};

// Pointers to one sample's bag in the source data (no copy).
struct BagRef {
  const int32_t* ids;
  int32_t len;
  float scale;  // 1 for sum, 1/valid-count for mean (0 when empty)
};

// --- embedding_bag.cc ---------------------------------------------------------------------------
// Resolve bags for rows src[s][r] of `ds` and write pooled embeddings (and wide sums) for every
// slot in `slots`: out[r * ldo + col0 + k * dim ...] for the k-th listed slot. Returns false and
// sets *bad_id if an id >= vocab is met.
struct EmbeddingLayout {
  int dim = 0;
  bool mean = false;
  std::vector<int64_t> base, vocab;  // per slot first row in the concatenated table, vocab size
  // per slot: 1 = switched off (read as an empty bag: no rows, scale 0, nothing to update); may be null
  const uint8_t* off = nullptr;
};
bool embedding_bag_forward(ThreadPool& pool, const DataSource& ds, const EmbeddingLayout& L, const float* table,
                           const float* wide_table, const std::vector<int>& slots,
                           const std::vector<const int64_t*>& src_rows, int64_t B, float* out, int64_t ldo, int col0,
                           BagRef* bags /* B x slots.size(), may be null */, float* wide_out /* B, += */,
                           int64_t* bad_id, int* bad_slot);

struct SparseState {
  float* m = nullptr;  // adam first moment or adagrad accumulator (rows x width)
  float* v = nullptr;  // adam second moment
};
// Fused embedding backward + sparse optimizer. Thread t owns rows with row % T == t and visits bags
// in batch order, so each row's gradient sum has a fixed order. d_emb is B x (S*dim) (slot-major
// columns), d_logit is B (for the wide table). When capture_* is non-null the summed gradient is
// written there (full table shape) instead of updating: used by the gradient oracle.
struct SparseBackwardScratch {
  std::vector<int32_t> row_map;  // table rows -> local index, -1 when unused
  std::vector<std::vector<int64_t>> uniq;
  std::vector<std::vector<float>> grad, wgrad;
};
void embedding_bag_backward_update(ThreadPool& pool, const EmbeddingLayout& L, const BagRef* bags, int nslots_all,
                                   const std::vector<uint8_t>& frozen, int64_t B, const float* d_emb, int64_t ld_demb,
                                   const float* d_logit, float* table, float* wide_table, SparseState emb_state,
                                   SparseState wide_state, const SparseOpt& opt, int64_t step, SparseBackwardScratch& scratch,
                                   float* capture_emb, float* capture_wide);

// --- optimizers.cc ------------------------------------------------------------------------------
void dense_adam(ThreadPool& pool, float* w, const float* g, float* m, float* v, int64_t n, const DenseOpt& o, int64_t step);
void sparse_row_update(float* w, const float* g, float* m, float* v, int width, const SparseOpt& o, float bc1, float bc2);

// Inlined, vectorizable form of sparse_row_update for the embedding rows (constants hoisted).
struct SparseRowStep {
  float lr, b1, b2, eps, step_size, inv_sqrt_bc2;
  int kind;
  SparseRowStep(const SparseOpt& o, float bc1, float bc2)
      : lr(o.lr), b1(o.b1), b2(o.b2), eps(o.eps), step_size(o.lr / bc1), inv_sqrt_bc2(1.f / std::sqrt(bc2)), kind(o.kind) {}
  template <int W>
  inline void apply(float* __restrict w, const float* __restrict g, float* __restrict m, float* __restrict v, int width) const {
    const int n = W ? W : width;
    if (kind == 0) {
#pragma GCC unroll 16
      for (int k = 0; k < n; ++k) {
        m[k] += g[k] * g[k];
        w[k] -= lr * g[k] / (std::sqrt(m[k]) + eps);
      }
    } else {
#pragma GCC unroll 16
      for (int k = 0; k < n; ++k) {
        m[k] = b1 * m[k] + (1.f - b1) * g[k];
        v[k] = b2 * v[k] + (1.f - b2) * g[k] * g[k];
        w[k] -= step_size * m[k] / (std::sqrt(v[k]) * inv_sqrt_bc2 + eps);
      }
    }
  }
};

// --- metrics.cc ---------------------------------------------------------------------------------
struct Metrics {
  double auc, logloss, calibration, mean_pred, mean_label;
};
// Exact AUC (ties count one half), weighted logloss, mean prediction / mean label.
Metrics compute_metrics(const float* pred, const float* label, const float* weight, int64_t n);

}  // namespace abacus
