// The CUDA model: the same public surface as CpuModel (cpu/model.h) so the N-API layer
// (native/addon.cc, compiled again for this addon) drives it unchanged. Parameters and optimizer
// state live on the GPU; a CpuModel of the same config is the host mirror (initialisation,
// normalisation fit, checkpoint views, the gradient oracle). The mirror is refreshed lazily when
// JS asks for tensor views, and re-uploaded before the next GPU operation after it did.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../common/data_source.h"
#include "../cpu/model.h"

namespace abacus {

struct CudaImpl;

// Device index used by the next CudaModel constructed on this thread (set by the addon's
// setDevice() right before `new NativeModel(cfg)`).
void cuda_set_next_device(int d);
int cuda_device_count();
std::string cuda_device_name(int d);
std::string cuda_status_line();
// "" while device d's CUDA context is usable in this process; else why it is not (a sticky error
// such as an illegal address or a trap: every later CUDA call of the process fails the same way)
std::string cuda_context_lost(int d);
// Debug / fault injection only: launches a kernel that traps on device d, which leaves the
// process's context on d unusable (a sticky cudaErrorLaunchFailure). Returns the error it caused.
std::string cuda_inject_fault(int d);
// Tag that starts the message of every error after which the process's CUDA context is lost
// (the caller must stop using the GPU in this process and restart it).
extern const char* const kCudaContextLostTag;

class CudaModel {
 public:
  explicit CudaModel(const ModelConfig& cfg);
  ~CudaModel();
  const ModelConfig& config() const { return host_->config(); }
  std::vector<Tensor>& params();
  std::vector<Tensor>& opt_state();
  int64_t step = 0;
  bool normalized = false;
  std::vector<uint8_t> frozen;
  // inputs switched off (numeric then slots), as CpuModel::off
  std::vector<uint8_t> off;
  std::atomic<bool> cancel{false};
  // GPU time of the last lean predict's forward (ms, CUDA events around the kernels on the stream;
  // no host dispatch, no copy of the predictions back); -1 before the first
  double last_device_ms = -1;
  ThreadPool& pool() { return host_->pool(); }
  // getState().evalPrecision: the GEMM math of predict / evaluate / ablate ("tf32" or "fp32")
  const char* eval_precision() const;
  // getState().evalKernel: the same as eval_precision() on the GPU (no separate kernel choice)
  const char* eval_kernel_name() const { return eval_precision(); }
  // the embedding tables in host memory with a device cache of their rows (ABACUS_HBM_BUDGET_GB):
  // out = cache rows, table rows, rows loaded, rows written back, rows found cached; false: on the device
  bool cache_state(int64_t* out) const;

  TrainResult train(const DataSource& tr, const DataSource* val, const TrainOptions& o,
                    const std::function<void(const Progress&)>& progress);
  void predict(const DataSource& ds, int64_t batch, float* pred, float* label, float* weight, int32_t* key);
  // predictions only, into `pred` (the CUDA addon's lean predict path): offsets are validated when
  // the data is first made resident, not on every call; the copy back goes through a pinned buffer
  void predict_lean(const DataSource& ds, int64_t batch, float* pred);
  // the metrics of ds (exact_metrics' five: auc, logloss, calibration, mean prediction, mean label)
  // computed on the GPU from the predictions and the resident labels: no prediction leaves the
  // device. The AUC is the same number as on the host, bit for bit (exact rank sums in double);
  // the logloss and means are summed in another order (last bits)
  void evaluate_device(const DataSource& ds, int64_t batch, double* out);
  void ablate(const DataSource& ds, const std::vector<AblationGroup>& groups, int repeats, uint64_t seed, int64_t batch,
              Metrics& base, std::vector<Metrics>& out, std::vector<Metrics>* base_folds = nullptr,
              std::vector<Metrics>* out_folds = nullptr, int folds = 10);
  double gradients(const DataSource& ds, float* logits, std::map<std::string, std::vector<float>>& grads);
  void fit_normalization(const DataSource& ds, const std::vector<int64_t>& rows);
  // as CpuModel::copy_from: on the same GPU a device-to-device copy, from another GPU a peer copy
  // (the host mirror is not involved, only its normalisation)
  void copy_from(CudaModel& other);

 private:
  // the operations themselves; the public ones above check the context first and classify what
  // they throw (cuda_context_lost / kCudaContextLostTag)
  TrainResult train_(const DataSource& tr, const DataSource* val, const TrainOptions& o,
                     const std::function<void(const Progress&)>& progress);
  void predict_(const DataSource& ds, int64_t batch, float* pred, float* label, float* weight, int32_t* key);
  void predict_lean_(const DataSource& ds, int64_t batch, float* pred);
  void evaluate_device_(const DataSource& ds, int64_t batch, double* out);
  void ablate_(const DataSource& ds, const std::vector<AblationGroup>& groups, int repeats, uint64_t seed, int64_t batch,
               Metrics& base, std::vector<Metrics>& out, std::vector<Metrics>* base_folds, std::vector<Metrics>* out_folds,
               int folds);
  void init(const ModelConfig& cfg);
  void to_host_state();
  void from_host_state();
  std::unique_ptr<CpuModel> host_;
  std::unique_ptr<CudaImpl> impl_;
};

}  // namespace abacus
