// Metrics on the GPU: exact AUC (ties = 1/2), weighted logloss and calibration of one prediction
// vector (validation during training: thrust), and of many segments at once (ablation: every
// configuration and fold in one segmented sort).
#include <cub/device/device_segmented_sort.cuh>
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/constant_iterator.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "cuda_impl.cuh"

namespace abacus {

// ----- metrics on the GPU: exact AUC (ties = 1/2), weighted logloss, calibration -----
namespace {
struct MetAcc {
  double ll, w, wp, wy;
};
struct MetOp {
  __host__ __device__ MetAcc operator()(const MetAcc& a, const MetAcc& b) const {
    return {a.ll + b.ll, a.w + b.w, a.wp + b.wp, a.wy + b.wy};
  }
};
struct MetTerm {
  const float *p, *y, *w;
  __host__ __device__ MetAcc operator()(int64_t i) const {
    const double ww = w ? w[i] : 1.0;
    double pp = p[i];
    pp = pp < 1e-7 ? 1e-7 : (pp > 1 - 1e-7 ? 1 - 1e-7 : pp);
    const double yy = y[i];
    return {-ww * (yy * log(pp) + (1 - yy) * log(1 - pp)), ww, ww * p[i], ww * yy};
  }
};
struct TupPlus {
    __host__ __device__ thrust::tuple<double, double> operator()(const thrust::tuple<double, double>& a,
                                                                 const thrust::tuple<double, double>& b) const {
      return thrust::make_tuple(thrust::get<0>(a) + thrust::get<0>(b), thrust::get<1>(a) + thrust::get<1>(b));
    }
  };
struct RowOf {
  int64_t n;
  __host__ __device__ int32_t operator()(int64_t i) const { return (int32_t)(i % n); }
};
struct PosOf {
  __host__ __device__ double operator()(float y) const { return y > 0.5f ? 1.0 : 0.0; }
};
struct RankTerm {
  __host__ __device__ double operator()(const thrust::tuple<double, double, double>& t) const {
    // (count, positives, start) of a tie group: positives x average rank
    const double cnt = thrust::get<0>(t), pos = thrust::get<1>(t), start = thrust::get<2>(t);
    return pos * 0.5 * (2 * start + 1 + cnt);
  }
};
}  // namespace

Metrics gpu_metrics(CudaImpl& I, const float* pred, const float* lab, const float* w, int64_t n,
                    float* tmp_k, float* tmp_y, double* tmp_a, double* tmp_b, double* tmp_c, float* tmp_keys2) {
  Metrics r{std::nan(""), std::nan(""), std::nan(""), 0, 0};
  if (n == 0) return r;
  auto pol = thrust::cuda::par.on(I.st);
  CK(cudaMemcpyAsync(tmp_k, pred, n * sizeof(float), cudaMemcpyDeviceToDevice, I.st));
  CK(cudaMemcpyAsync(tmp_y, lab, n * sizeof(float), cudaMemcpyDeviceToDevice, I.st));
  thrust::device_ptr<float> K(tmp_k), Y(tmp_y), K2(tmp_keys2);
  thrust::sort_by_key(pol, K, K + n, Y);
  thrust::device_ptr<double> A(tmp_a), Bp(tmp_b), C(tmp_c);
  // per tie group: count and positives
  auto vals = thrust::make_zip_iterator(thrust::make_tuple(thrust::make_constant_iterator(1.0),
                                                           thrust::make_transform_iterator(Y, PosOf())));
  auto outv = thrust::make_zip_iterator(thrust::make_tuple(A, Bp));
  auto ends = thrust::reduce_by_key(pol, K, K + n, vals, K2, outv, thrust::equal_to<float>(), TupPlus());
  const int64_t groups = ends.first - K2;
  thrust::exclusive_scan(pol, A, A + groups, C);
  const double rank_sum = thrust::transform_reduce(
      pol, thrust::make_zip_iterator(thrust::make_tuple(A, Bp, C)),
      thrust::make_zip_iterator(thrust::make_tuple(A + groups, Bp + groups, C + groups)), RankTerm(), 0.0,
      thrust::plus<double>());
  const double pos = thrust::reduce(pol, Bp, Bp + groups, 0.0);
  const double neg = (double)n - pos;
  r.auc = (pos > 0 && neg > 0) ? (rank_sum - pos * (pos + 1) / 2) / (pos * neg) : std::nan("");
  MetAcc m = thrust::transform_reduce(pol, thrust::make_counting_iterator<int64_t>(0),
                                      thrust::make_counting_iterator<int64_t>(n), MetTerm{pred, lab, w},
                                      MetAcc{0, 0, 0, 0}, MetOp());
  // a diverged model predicts NaN: the tie groups above mean nothing then
  if (!std::isfinite(m.wp)) r.auc = std::nan("");
  r.logloss = m.ll / m.w;
  r.mean_pred = m.wp / m.w;
  r.mean_label = m.wy / m.w;
  r.calibration = m.wy > 0 ? m.wp / m.wy : std::nan("");
  return r;
}

// Metrics of many segments at once (ablation: every configuration and fold): one segmented sort
// of (prediction, row) pairs, then one thread per segment walks its sorted run (tie groups for the
// exact AUC, weighted logloss and means), all in double; results copied back once.
namespace {
struct SegOut {
  double auc, ll, w, wp, wy;
};
__global__ void seg_metrics_kernel(const float* __restrict__ key, const int32_t* __restrict__ idx,
                                   const int64_t* __restrict__ beg, const int64_t* __restrict__ end, int nseg,
                                   const float* __restrict__ lab, const float* __restrict__ w, SegOut* out) {
  const int sg = blockIdx.x * blockDim.x + threadIdx.x;
  if (sg >= nseg) return;
  const int64_t b = beg[sg], e = end[sg];
  double rank_sum = 0, pos = 0, ll = 0, ws = 0, wp = 0, wy = 0;
  int64_t i = b;
  while (i < e) {
    const float kv = key[i];
    int64_t j = i;
    double gp = 0;
    for (; j < e && key[j] == kv; ++j) {
      const int32_t r = idx[j];
      const double yy = lab[r];
      const double ww = w ? w[r] : 1.0;
      double pp = kv;
      pp = pp < 1e-7 ? 1e-7 : (pp > 1 - 1e-7 ? 1 - 1e-7 : pp);
      ll += -ww * (yy * log(pp) + (1 - yy) * log(1 - pp));
      ws += ww;
      wp += ww * kv;
      wy += ww * yy;
      gp += lab[r] > 0.5f ? 1.0 : 0.0;
    }
    const double cnt = (double)(j - i), start = (double)(i - b);
    rank_sum += gp * 0.5 * (2 * start + 1 + cnt);
    pos += gp;
    i = j;
  }
  const double n = (double)(e - b), neg = n - pos;
  out[sg] = {(pos > 0 && neg > 0) ? (rank_sum - pos * (pos + 1) / 2) / (pos * neg) : nan(""), ll, ws, wp, wy};
}
// One block per segment (the thread-per-segment walk above took tens of ms for 78 x 65536 rows):
// threads stride over the sorted run; an element's tie group bounds come from binary searches,
// only where a neighbour has the same key. Sums in double, reduced in shared memory.
constexpr int kSegThreads = 256;
__global__ void __launch_bounds__(kSegThreads) seg_metrics_block(const float* __restrict__ key, const int32_t* __restrict__ idx,
                                  const int64_t* __restrict__ beg, const int64_t* __restrict__ end,
                                  const float* __restrict__ lab, const float* __restrict__ w, SegOut* out) {
  const int sg = blockIdx.x;
  const int64_t b = beg[sg], e = end[sg];
  double rs = 0, pos = 0, ll = 0, ws = 0, wp = 0, wy = 0;
  for (int64_t i = b + threadIdx.x; i < e; i += kSegThreads) {
    const float kv = key[i];
    const int32_t r = idx[i];
    const float yf = lab[r];
    const double yy = yf;
    const double ww = w ? w[r] : 1.0;
    double pp = kv;
    pp = pp < 1e-7 ? 1e-7 : (pp > 1 - 1e-7 ? 1 - 1e-7 : pp);
    ll += -ww * (yy * log(pp) + (1 - yy) * log(1 - pp));
    ws += ww;
    wp += ww * kv;
    wy += ww * yy;
    if (yf > 0.5f) {
      int64_t lo = i, hi = i;
      if ((i > b && key[i - 1] == kv) || (i + 1 < e && key[i + 1] == kv)) {
        int64_t a = b, z = i;  // first index in [b, i] with key == kv
        while (a < z) { const int64_t m = (a + z) / 2; if (key[m] < kv) a = m + 1; else z = m; }
        lo = a;
        a = i; z = e;  // first index in [i, e) with key > kv
        while (a < z) { const int64_t m = (a + z) / 2; if (key[m] <= kv) a = m + 1; else z = m; }
        hi = a - 1;
      }
      rs += 0.5 * (double)((lo - b) + (hi - b)) + 1.0;
      pos += 1;
    }
  }
  __shared__ double sh[6][kSegThreads];
  const int t = threadIdx.x;
  sh[0][t] = rs; sh[1][t] = pos; sh[2][t] = ll; sh[3][t] = ws; sh[4][t] = wp; sh[5][t] = wy;
  __syncthreads();
  for (int o = kSegThreads / 2; o > 0; o >>= 1) {
    if (t < o)
      for (int q = 0; q < 6; ++q) sh[q][t] += sh[q][t + o];
    __syncthreads();
  }
  if (t == 0) {
    const double n = (double)(e - b), P = sh[1][0], neg = n - P;
    out[sg] = {(P > 0 && neg > 0) ? (sh[0][0] - P * (P + 1) / 2) / (P * neg) : nan(""), sh[2][0], sh[3][0], sh[4][0], sh[5][0]};
  }
}
}  // namespace

// metrics of C prediction vectors p[c * n ..+ n): whole (C results) and, when F > 0, per fold
// (C * F results, fold f = rows [n f / F, n (f+1) / F))
void seg_metrics(CudaImpl& I, const float* p, int64_t C, int64_t n, int F, const float* lab, const float* w,
                 std::vector<Metrics>& whole, std::vector<Metrics>* folds) {
  const int64_t total = C * n;
  const int nseg = (int)(C * (1 + (folds ? F : 0)));
  std::vector<int64_t> hb(nseg), he(nseg);
  for (int64_t c = 0; c < C; ++c) { hb[c] = c * n; he[c] = (c + 1) * n; }
  if (folds)
    for (int64_t c = 0; c < C; ++c)
      for (int f = 0; f < F; ++f) {
        hb[C + c * F + f] = c * n + n * f / F;
        he[C + c * F + f] = c * n + n * (f + 1) / F;
      }
  float* ko = (float*)I.scratch("seg.ko", std::max<int64_t>(total, 1) * 4);
  int32_t* vi = (int32_t*)I.scratch("seg.vi", std::max<int64_t>(total, 1) * 4);
  int32_t* vo = (int32_t*)I.scratch("seg.vo", std::max<int64_t>(total, 1) * 4);
  int64_t* db = (int64_t*)I.scratch("seg.db", (size_t)nseg * 8);
  int64_t* de = (int64_t*)I.scratch("seg.de", (size_t)nseg * 8);
  SegOut* so = (SegOut*)I.scratch("seg.so", (size_t)nseg * sizeof(SegOut));
  void* tmp = nullptr;
  auto done = [&] {};
  try {
    CK(cudaMemcpyAsync(db, hb.data(), nseg * 8, cudaMemcpyHostToDevice, I.st));
    CK(cudaMemcpyAsync(de, he.data(), nseg * 8, cudaMemcpyHostToDevice, I.st));
    thrust::transform(thrust::cuda::par.on(I.st), thrust::make_counting_iterator<int64_t>(0),
                      thrust::make_counting_iterator<int64_t>(total), thrust::device_ptr<int32_t>(vi), RowOf{n});
    std::vector<Metrics> res(nseg);
    for (int pass = 0; pass < (folds ? 2 : 1); ++pass) {
      // pass 0: whole vectors; pass 1: folds (sorted again inside each fold)
      const int s0 = pass == 0 ? 0 : (int)C, ns = pass == 0 ? (int)C : (int)(C * F);
      size_t tb = 0;
      CK(cub::DeviceSegmentedSort::SortPairs(nullptr, tb, p, ko, vi, vo, total, ns, db + s0, de + s0, I.st));
      tmp = I.scratch("seg.tmp", tb);
      CK(cub::DeviceSegmentedSort::SortPairs(tmp, tb, p, ko, vi, vo, total, ns, db + s0, de + s0, I.st));
      if (std::getenv("ABACUS_CUDA_SEG_SERIAL"))
        seg_metrics_kernel<<<(ns + 127) / 128, 128, 0, I.st>>>(ko, vo, db + s0, de + s0, ns, lab, w, so + s0);
      else
        seg_metrics_block<<<ns, kSegThreads, 0, I.st>>>(ko, vo, db + s0, de + s0, lab, w, so + s0);
    }
    std::vector<SegOut> h(nseg);
    CK(cudaMemcpyAsync(h.data(), so, nseg * sizeof(SegOut), cudaMemcpyDeviceToHost, I.st));
    CK(cudaStreamSynchronize(I.st));
    auto conv = [](const SegOut& o) {
      Metrics r{o.auc, o.ll / o.w, o.wy > 0 ? o.wp / o.wy : std::nan(""), o.wp / o.w, o.wy / o.w};
      return r;
    };
    for (int64_t c = 0; c < C; ++c) whole.push_back(conv(h[c]));
    if (folds)
      for (int64_t q = 0; q < C * F; ++q) folds->push_back(conv(h[C + q]));
  } catch (...) {
    cudaStreamSynchronize(I.st);
    done();
    throw;
  }
  done();
}

}  // namespace abacus
