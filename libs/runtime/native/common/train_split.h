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

}  // namespace abacus
