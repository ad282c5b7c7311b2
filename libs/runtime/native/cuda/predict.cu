// Predict on the GPU: the evaluation forward in passes of at least ABACUS_CUDA_EVAL_BATCH rows
// (BF16 or TF32 / FP32), the lean path (pinned copy back into the caller's array) and the shared
// addon path (labels, weights and keys copied from the host parts).
#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "cuda_impl.cuh"

namespace abacus {

// predictions (sigmoid) of rows order[b0..] or b0.. for all n rows into pred (device)
void CudaImpl::predict_dev(const k::DevData& d, const int64_t* order, int64_t n, int64_t batch, float* pred, float* labo,
                           float* wto, const std::atomic<bool>* cancel) {
  ensure(std::min(batch, std::max<int64_t>(n, 1)));
  EvalCtx ectx(eval_ctx);
  double pt = prof ? now_s() : 0;
  auto pmark = [&](const char* ph) {
    if (!prof) return;
    cudaStreamSynchronize(st);
    const double t = now_s();
    char b[64];
    snprintf(b, sizeof b, " %s=%.3f", ph, (t - pt) * 1e3);
    prof_detail += b;
    pt = t;
  };
  if (prof) { cudaStreamSynchronize(st); pt = now_s(); prof_detail.clear(); }
  const bool bfe = bf16_ready(std::min(batch, std::max<int64_t>(n, 1)));
  if (bfe) refresh_wb();
  for (int64_t b0 = 0, B = 0; b0 < n; b0 += B) {
    B = std::min(batch, n - b0);
    // tables in host memory: the pass's rows made resident first (a pass reading more rows than the
    // cache holds is halved until it fits)
    while (cached && !cache_fill(d, order, b0, B, B == 1)) B = (B + 1) / 2;
    if (wide) CK(cudaMemsetAsync(widev, 0, B * sizeof(float), st));
    gather(d, order, nullptr, b0, B, false, bfe ? 2 : 1);
    pmark("gather");
    if (prof)
      for (int l = 0; l < L; ++l) {
        if (bfe) mlp_forward_bf16(B, l, l + 1);
        else mlp_forward(B, l, false, l + 1);
        pmark(l == 0 ? "layer0" : "layer1+");
      }
    else if (bfe)
      mlp_forward_bf16(B, 0);
    else
      mlp_forward(B, 0, false);
    k::head<<<blocks_for(B * 32), 256, 0, st>>>(layer_in(L), in_dim[L], (int)ld_in(L), dense + w_off[L],
                                                dense + b_off[L], wide ? widev : nullptr, S + 1, nullptr, lab, wt, B, false,
                                                nullptr, nullptr, nullptr, nullptr, nullptr, pred, b0, labo, wto);
    if (cancel && cancel->load()) throw std::runtime_error("cancelled");
  }
}

// Shared by both predicts: parameters up to date, data resident, a prediction buffer of n rows.
template <class Prof>
static const DevDataset& predict_prologue(CudaImpl& I, CpuModel& host, const std::vector<uint8_t>& frozen, const std::vector<uint8_t>& off,
                                          const DataSource& ds, Prof& P) {
  upload(I, host, frozen, off);
  P.mark("upload");
  const DevDataset& d = resident(I, ds);
  P.mark("resident");
  if (ds.rows > I.pred_cap) {
    if (I.pred_buf) cudaFree(I.pred_buf);
    I.pred_cap = ds.rows;
    I.pred_buf = dalloc<float>(ds.rows, false);
  }
  return d;
}

void CudaModel::predict_lean_(const DataSource& ds, int64_t batch, float* pred) {
  CudaImpl& I = *impl_;
  CK(cudaSetDevice(I.dev));
  Prof P(I, "predict(lean)");
  const DevDataset& d = predict_prologue(I, *host_, frozen, off, ds, P);
  const int64_t n = ds.rows;
  float* pin = I.pinned_floats(n);
  cudaEvent_t ev0 = nullptr, ev1 = nullptr;
  CK(cudaEventCreate(&ev0));
  CK(cudaEventCreate(&ev1));
  try {
    CK(cudaEventRecord(ev0, I.st));
    I.predict_dev(d.d, nullptr, n, I.eval_batch(batch), I.pred_buf, nullptr, nullptr, &cancel);
    CK(cudaEventRecord(ev1, I.st));
    P.mark("gpu");
    if (I.prof) P.line += " [" + I.prof_detail + " ]";
    CK(cudaMemcpyAsync(pin, I.pred_buf, n * 4, cudaMemcpyDeviceToHost, I.st));
    // the caller's array is freshly allocated: fault its pages in while the GPU still works
    // (otherwise the copy below pays one page fault per 4 KB, ~0.1 ms per 65,536 rows)
    for (int64_t i = 0; i < n; i += 1024) reinterpret_cast<volatile float*>(pred)[i] = 0.f;
    CK(cudaStreamSynchronize(I.st));
    P.mark("d2h");
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, ev0, ev1));
    last_device_ms = ms;
    std::memcpy(pred, pin, n * 4);
    P.mark("host_copy");
  } catch (...) {
    cudaStreamSynchronize(I.st);
    cudaEventDestroy(ev0);
    cudaEventDestroy(ev1);
    throw;
  }
  cudaEventDestroy(ev0);
  cudaEventDestroy(ev1);
}

void CudaModel::evaluate_device_(const DataSource& ds, int64_t batch, double* out) {
  CudaImpl& I = *impl_;
  CK(cudaSetDevice(I.dev));
  Prof P(I, "evaluate(device)");
  const DevDataset& d = predict_prologue(I, *host_, frozen, off, ds, P);
  const int64_t n = ds.rows;
  cudaEvent_t ev0 = nullptr, ev1 = nullptr;
  CK(cudaEventCreate(&ev0));
  CK(cudaEventCreate(&ev1));
  try {
    CK(cudaEventRecord(ev0, I.st));
    I.predict_dev(d.d, nullptr, n, I.eval_batch(batch), I.pred_buf, nullptr, nullptr, &cancel);
    CK(cudaEventRecord(ev1, I.st));
    // one segment: the ablation's metrics (cub sort into the model's scratch, one block's exact
    // rank sums); seg_metrics waits for its result on the stream
    std::vector<Metrics> m;
    seg_metrics(I, I.pred_buf, 1, n, 0, d.d.lab, d.d.wt, m, nullptr);
    P.mark("gpu+metrics");
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, ev0, ev1));
    last_device_ms = ms;
    const Metrics& r = m.at(0);
    // as exact_metrics: no AUC from a prediction that is not finite (a diverged model)
    out[0] = std::isfinite(r.mean_pred) ? r.auc : std::nan("");
    out[1] = r.logloss;
    out[2] = r.calibration;
    out[3] = r.mean_pred;
    out[4] = r.mean_label;
  } catch (...) {
    cudaStreamSynchronize(I.st);
    cudaEventDestroy(ev0);
    cudaEventDestroy(ev1);
    throw;
  }
  cudaEventDestroy(ev0);
  cudaEventDestroy(ev1);
}

void CudaModel::predict_(const DataSource& ds, int64_t batch, float* pred, float* label, float* weight, int32_t* key) {
  CudaImpl& I = *impl_;
  CK(cudaSetDevice(I.dev));
  Prof P(I, "predict(legacy)");
  const DevDataset& d = predict_prologue(I, *host_, frozen, off, ds, P);
  const int64_t n = ds.rows;
  float* dp = I.pred_buf;
  try {
    I.predict_dev(d.d, nullptr, n, I.eval_batch(batch), dp, nullptr, nullptr, &cancel);
    P.mark("gpu");
    CK(cudaMemcpyAsync(pred, dp, n * 4, cudaMemcpyDeviceToHost, I.st));
    // labels / weights / keys straight from the host parts while the GPU works (no per-row locate)
    int64_t g = 0;
    for (auto& p : ds.parts) {
      if (label) std::memcpy(label + g, p.labels, p.rows * 4);
      if (weight) {
        if (p.weights) std::memcpy(weight + g, p.weights, p.rows * 4);
        else std::fill(weight + g, weight + g + p.rows, 1.f);
      }
      if (key) {
        if (p.key) std::memcpy(key + g, p.key, p.rows * 4);
        else std::fill(key + g, key + g + p.rows, 0);
      }
      g += p.rows;
    }
    CK(cudaStreamSynchronize(I.st));
    P.mark("d2h+host_copies");
  } catch (...) {
    cudaStreamSynchronize(I.st);
    throw;
  }
}

}  // namespace abacus
