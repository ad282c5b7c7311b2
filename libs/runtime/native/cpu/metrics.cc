#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels.h"

namespace abacus {

Metrics compute_metrics(const float* pred, const float* label, const float* weight, int64_t n) {
  Metrics r{std::nan(""), std::nan(""), std::nan(""), 0, 0};
  if (n == 0) return r;
  // a diverged model predicts NaN: no ranking exists (and NaN breaks both the sort's ordering and
  // the tie-group scan below, which would never advance), so its AUC is NaN and its logloss too
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(pred[i])) {
      r.logloss = std::nan("");
      return r;
    }
  }
  std::vector<int64_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return pred[a] < pred[b]; });
  double pos = 0, rank_sum = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    double p_in = 0;
    while (j < n && pred[idx[j]] == pred[idx[i]]) { p_in += label[idx[j]] > 0.5f ? 1 : 0; ++j; }
    rank_sum += p_in * (0.5 * (double)(i + 1 + j));  // average rank of the tie group
    pos += p_in;
    i = j;
  }
  double neg = (double)n - pos;
  r.auc = (pos > 0 && neg > 0) ? (rank_sum - pos * (pos + 1) / 2) / (pos * neg) : std::nan("");
  double ll = 0, wsum = 0, sp = 0, sl = 0;
  for (int64_t i = 0; i < n; ++i) {
    double w = weight ? weight[i] : 1.0;
    double p = std::min(std::max((double)pred[i], 1e-7), 1 - 1e-7);
    ll -= w * (label[i] * std::log(p) + (1 - label[i]) * std::log(1 - p));
    wsum += w; sp += w * pred[i]; sl += w * label[i];
  }
  r.logloss = ll / wsum;
  r.mean_pred = sp / wsum;
  r.mean_label = sl / wsum;
  r.calibration = sl > 0 ? sp / sl : std::nan("");
  return r;
}

}  // namespace abacus
