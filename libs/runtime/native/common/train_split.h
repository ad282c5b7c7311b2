#pragma once
// The train / validation rows of a training run, shared by the CPU and CUDA backends so both see
// exactly the same split (their parity depends on it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "data_source.h"
#include "rng.h"

namespace abacus {

// With a separate validation source: all rows of each. Otherwise a seeded val_fraction of the
// training rows (sorted, so batches read in file order). Returns the validation source (or null).
inline const DataSource* split_train_val(const DataSource& tr, const DataSource* val, double val_fraction, uint64_t seed,
                                         std::vector<int64_t>& train_rows, std::vector<int64_t>& val_rows) {
  auto all = [](std::vector<int64_t>& rows, int64_t n) {
    rows.resize(n);
    for (int64_t i = 0; i < n; ++i) rows[i] = i;
  };
  val_rows.clear();
  if (val) {
    all(train_rows, tr.rows);
    all(val_rows, val->rows);
    return val;
  }
  if (val_fraction > 0) {
    std::vector<int64_t> p;
    seeded_permutation(p, tr.rows, mix_seed(seed, 7));
    int64_t nv = (int64_t)std::llround(tr.rows * val_fraction);
    val_rows.assign(p.begin(), p.begin() + nv);
    train_rows.assign(p.begin() + nv, p.end());
    std::sort(val_rows.begin(), val_rows.end());
    std::sort(train_rows.begin(), train_rows.end());
    return &tr;
  }
  all(train_rows, tr.rows);
  return nullptr;
}

// Rows of training data read from mapped shards are taken a window at a time (see epoch_order).
constexpr int64_t kWindowRows = int64_t(1) << 19;
constexpr int64_t kBlockRows = 256;
// Rows read in order (evaluation, normalization) between two releases of the mapped pages.
constexpr int64_t kReleaseEvery = int64_t(1) << 18;

// The order of an epoch's training rows, shared by the CPU and CUDA backends. In memory (or with at
// most one window of rows) a seeded permutation of all rows. From mapped shards larger than a window,
// a windowed shuffle: blocks of kBlockRows consecutive training rows in a seeded order, then each
// window of kWindowRows rows (whole blocks) shuffled among itself, so an epoch reads every block once
// and at most one window is resident at a time (`ends` receives where each window ends in `order`).
inline void epoch_order(const std::vector<int64_t>& rows, bool shuffle, bool windowed, uint64_t seed, int ep,
                        std::vector<int64_t>& order, std::vector<int64_t>& ends) {
  const int64_t n = (int64_t)rows.size();
  order.resize(n);
  ends.clear();
  if (!shuffle) {
    for (int64_t i = 0; i < n; ++i) order[i] = rows[i];
    if (windowed)
      for (int64_t e = kWindowRows; e < n; e += kWindowRows) ends.push_back(e);
    ends.push_back(n);
    return;
  }
  std::vector<int64_t> p;
  if (!windowed || n <= kWindowRows) {
    seeded_permutation(p, n, mix_seed(seed, 11, ep));
    for (int64_t i = 0; i < n; ++i) order[i] = rows[p[i]];
    ends.push_back(n);
    return;
  }
  const int64_t blocks = (n + kBlockRows - 1) / kBlockRows;
  std::vector<int64_t> bp, wp;
  seeded_permutation(bp, blocks, mix_seed(seed, 13, ep));
  const int64_t per = std::max<int64_t>(1, kWindowRows / kBlockRows);
  int64_t at = 0;
  for (int64_t w0 = 0; w0 < blocks; w0 += per) {
    const int64_t start = at;
    for (int64_t b = w0; b < std::min(blocks, w0 + per); ++b)
      for (int64_t i = bp[b] * kBlockRows; i < std::min(n, (bp[b] + 1) * kBlockRows); ++i) order[at++] = rows[i];
    const int64_t m = at - start;
    seeded_permutation(wp, m, mix_seed(seed, 17 + (uint64_t)w0, ep));
    std::vector<int64_t> tmp(order.begin() + start, order.begin() + at);
    for (int64_t i = 0; i < m; ++i) order[start + i] = tmp[wp[i]];
    ends.push_back(at);
  }
}

}  // namespace abacus
