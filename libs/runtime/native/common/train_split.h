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
    // the permutation is laid out in train_rows itself (no second array of every row): its first nv
    // entries are the validation rows, the rest the training rows
    seeded_permutation(train_rows, tr.rows, mix_seed(seed, 7));
    int64_t nv = (int64_t)std::llround(tr.rows * val_fraction);
    val_rows.assign(train_rows.begin(), train_rows.begin() + nv);
    train_rows.erase(train_rows.begin(), train_rows.begin() + nv);
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

// The order of an epoch's training rows, shared by the CPU and CUDA backends, one window at a time.
// In memory (or with at most one window of rows) a seeded permutation of all rows: one window. From
// mapped shards larger than a window, a windowed shuffle: blocks of kBlockRows consecutive training
// rows in a seeded order, then each window of kWindowRows rows (whole blocks) shuffled among itself,
// so an epoch reads every block once and at most one window is resident at a time. Unshuffled: the
// rows in order, in windows of kWindowRows when windowed.
class WindowedShuffle {
 public:
  WindowedShuffle(const std::vector<int64_t>& rows, bool shuffle, bool windowed, uint64_t seed, int ep)
      : rows_(&rows), shuffle_(shuffle), seed_(seed), ep_(ep), n_((int64_t)rows.size()) {
    if (!shuffle) {
      if (windowed)
        for (int64_t e = kWindowRows; e < n_; e += kWindowRows) ends_.push_back(e);
      ends_.push_back(n_);
      return;
    }
    if (!windowed || n_ <= kWindowRows) {
      single_ = true;
      ends_.push_back(n_);
      return;
    }
    const int64_t blocks = (n_ + kBlockRows - 1) / kBlockRows;
    seeded_permutation(bp_, blocks, mix_seed(seed, 13, ep));
    per_ = std::max<int64_t>(1, kWindowRows / kBlockRows);
    int64_t at = 0;
    for (int64_t w0 = 0; w0 < blocks; w0 += per_) {
      for (int64_t b = w0; b < std::min(blocks, w0 + per_); ++b) at += std::min(n_, (bp_[b] + 1) * kBlockRows) - bp_[b] * kBlockRows;
      ends_.push_back(at);
    }
  }
  int64_t windows() const { return (int64_t)ends_.size(); }
  int64_t begin(int64_t w) const { return w ? ends_[w - 1] : 0; }
  int64_t end(int64_t w) const { return ends_[w]; }
  const std::vector<int64_t>& ends() const { return ends_; }
  // Window w's rows in the order they are stored (`plain`, ascending within each block) and its
  // shuffle: position i of the window holds plain[perm[i]]. Without a shuffle perm is the identity.
  void window(int64_t w, std::vector<int64_t>& plain, std::vector<int64_t>& perm) const {
    const int64_t b = begin(w), m = end(w) - b;
    const auto& rows = *rows_;
    if (bp_.empty()) {
      plain.assign(rows.begin() + b, rows.begin() + b + m);
      if (single_) {
        seeded_permutation(perm, n_, mix_seed(seed_, 11, ep_));
      } else {
        perm.resize(m);
        for (int64_t i = 0; i < m; ++i) perm[i] = i;
      }
      return;
    }
    const int64_t blocks = (int64_t)bp_.size(), w0 = w * per_;
    plain.clear();
    for (int64_t k = w0; k < std::min(blocks, w0 + per_); ++k)
      for (int64_t i = bp_[k] * kBlockRows; i < std::min(n_, (bp_[k] + 1) * kBlockRows); ++i) plain.push_back(rows[i]);
    seeded_permutation(perm, m, mix_seed(seed_, 17 + (uint64_t)w0, ep_));
  }

 private:
  const std::vector<int64_t>* rows_;
  bool shuffle_;
  uint64_t seed_;
  int ep_;
  int64_t n_;
  bool single_ = false;
  std::vector<int64_t> bp_;
  int64_t per_ = 0;
  std::vector<int64_t> ends_;
};

// The whole order of an epoch (`ends` receives where each window ends in `order`).
// The epoch's order written to `order` (rows.size() entries: a pinned buffer, say, with no vector
// beside it).
inline void epoch_order(const std::vector<int64_t>& rows, bool shuffle, bool windowed, uint64_t seed, int ep,
                        int64_t* order, std::vector<int64_t>& ends) {
  const WindowedShuffle ws(rows, shuffle, windowed, seed, ep);
  ends = ws.ends();
  if (!shuffle) {
    std::copy(rows.begin(), rows.end(), order);
    return;
  }
  std::vector<int64_t> plain, perm;
  for (int64_t w = 0; w < ws.windows(); ++w) {
    ws.window(w, plain, perm);
    const int64_t b = ws.begin(w), m = ws.end(w) - b;
    for (int64_t i = 0; i < m; ++i) order[b + i] = plain[perm[i]];
  }
}

inline void epoch_order(const std::vector<int64_t>& rows, bool shuffle, bool windowed, uint64_t seed, int ep,
                        std::vector<int64_t>& order, std::vector<int64_t>& ends) {
  order.resize(rows.size());
  epoch_order(rows, shuffle, windowed, seed, ep, order.data(), ends);
}

}  // namespace abacus
