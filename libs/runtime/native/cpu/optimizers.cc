#include <cmath>

#include "kernels.h"

namespace abacus {

void dense_adam(ThreadPool& pool, float* w, const float* g, float* m, float* v, int64_t n, const DenseOpt& o, int64_t step) {
  const float bc1 = 1.f - std::pow(o.b1, (float)step), bc2 = 1.f - std::pow(o.b2, (float)step);
  const float step_size = o.lr / bc1, sqrt_bc2 = std::sqrt(bc2);
  auto body = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float gi = g[i] + o.weight_decay * w[i];
      m[i] = o.b1 * m[i] + (1.f - o.b1) * gi;
      v[i] = o.b2 * v[i] + (1.f - o.b2) * gi * gi;
      w[i] -= step_size * m[i] / (std::sqrt(v[i]) / sqrt_bc2 + o.eps);
    }
  };
  if (n < 65536) { body(0, n); return; }
  pool.run([&](int t) {
    int64_t b, e;
    ThreadPool::range(n, t, pool.size(), b, e, 16);
    body(b, e);
  });
}

void sparse_row_update(float* w, const float* g, float* m, float* v, int width, const SparseOpt& o, float bc1, float bc2) {
  if (o.kind == 0) {  // Adagrad
    for (int k = 0; k < width; ++k) {
      m[k] += g[k] * g[k];
      w[k] -= o.lr * g[k] / (std::sqrt(m[k]) + o.eps);
    }
  } else {  // Adam on touched rows only, global step (torch.optim.SparseAdam)
    const float step_size = o.lr / bc1, sqrt_bc2 = std::sqrt(bc2);
    for (int k = 0; k < width; ++k) {
      m[k] = o.b1 * m[k] + (1.f - o.b1) * g[k];
      v[k] = o.b2 * v[k] + (1.f - o.b2) * g[k] * g[k];
      w[k] -= step_size * m[k] / (std::sqrt(v[k]) / sqrt_bc2 + o.eps);
    }
  }
}

}  // namespace abacus
