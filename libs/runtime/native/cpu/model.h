// The CPU model: parameters, optimizer state, preallocated per-batch workspace, and the train /
// predict / ablate / gradient loops built from the kernels in kernels.h and gemm.h.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../common/data_source.h"
#include "../common/huge_alloc.h"
#include "../common/thread_pool.h"
#include "kernels.h"
#include "mlp_bf16.h"

namespace abacus {

struct ModelConfig {
  int num_numeric = 0;
  std::vector<int64_t> vocab;
  int dim = 16;
  bool mean = false;
  bool wide = false;
  std::vector<int> hidden;
  DenseOpt dense;
  SparseOpt sparse;
  uint64_t seed = 0;
  bool torch_init = false;  // PyTorch defaults: embeddings N(0,1), Linear weight/bias U(+-1/sqrt(fan_in))
  int threads = 1;
  // cuda: per slot, the share of its table's rows a device cache holds (the tables then stay in host
  // memory, emb_cache.cu); empty: the budget decides
  std::vector<double> cache_load;
};

// the same model shape: inputs, table sizes, pooling, wide part, hidden layers, sparse optimizer
bool same_config(const ModelConfig& a, const ModelConfig& b);

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  float* data;
  int64_t size;
};

struct TrainOptions {
  int epochs = 1;
  int64_t batch = 1024;
  bool shuffle = true;
  uint64_t seed = 0;
  int64_t max_steps = -1;
  double val_fraction = 0;
  int patience = 0;  // 0: no early stopping
  double min_delta = 0;
  bool es_on_logloss = false;
  bool restore_best = true;
  int progress_every = 50;
  // evaluate the validation rows before the first step and count that as the best so far (with its
  // weights as the snapshot to restore): the epochs of this call continue one trained before it
  bool eval_first = false;
};

struct Progress {
  int epoch;
  int64_t step, total_steps;
  double loss, samples_per_s;
  bool epoch_end;
  double val_auc, val_logloss;
};

struct EpochRecord {
  int epoch;
  double train_loss, val_auc, val_logloss, seconds;
};

struct TrainResult {
  int64_t steps = 0, samples = 0;
  int epochs = 0, best_epoch = -1;
  double final_loss = 0, samples_per_s = 0, seconds = 0, best_val_auc = 0, best_val_logloss = 0;
  // where a fit's time went: waiting for a thread to run on (set by the addon), before the first
  // step (split, normalisation, data to the device), the per-epoch validation passes (within seconds)
  double queued_seconds = 0, setup_seconds = 0, eval_seconds = 0;
  bool stopped_early = false, cancelled = false;
  int64_t train_rows = 0, val_rows = 0;
  // eval_first: the validation metrics before the first step (NaN otherwise)
  double initial_val_auc = NAN, initial_val_logloss = NAN;
  std::vector<EpochRecord> history;
};

struct AblationGroup {
  std::vector<int> numeric, slots;
};

class CpuModel {
 public:
  explicit CpuModel(const ModelConfig& cfg);
  const ModelConfig& config() const { return cfg_; }
  std::vector<Tensor>& params() { return params_; }
  std::vector<Tensor>& opt_state() { return opt_; }
  int64_t step = 0;
  bool normalized = false;
  std::vector<uint8_t> frozen;
  // inputs switched off, numeric inputs then slots (num_numeric + slots flags): a numeric input
  // reads as its normalisation mean (0 after normalising), a slot as an empty bag (no rows read or
  // updated). The same model as one fed copies of the data with those inputs switched off.
  std::vector<uint8_t> off;
  std::atomic<bool> cancel{false};
  ThreadPool& pool() { return *pool_; }
  // Every parameter and optimizer value, the step, the normalisation and the frozen flags of a
  // model of the same configuration (not its switched-off inputs); throws when the configs differ.
  void copy_from(CpuModel& other);
  // "bf16" when predict / evaluate / ablate run the AVX512-BF16 forward, else "fp32"
  const char* eval_precision() const { return use_bf16() ? "bf16" : "fp32"; }
  // the device cache of embedding rows over host memory (the CUDA model's; the host model has none)
  bool cache_state(int64_t* /*rows, table rows, loads, writebacks, hits*/) const { return false; }
  const char* eval_kernel_name() const { return L_ > 0 ? eval_precision_name() : "fp32"; }

  TrainResult train(const DataSource& tr, const DataSource* val, const TrainOptions& o,
                    const std::function<void(const Progress&)>& progress);
  // predictions for every row of ds (n = ds.rows), also copies labels / weights / key if asked
  void predict(const DataSource& ds, int64_t batch, float* pred, float* label, float* weight, int32_t* key);
  void ablate(const DataSource& ds, const std::vector<AblationGroup>& groups, int repeats, uint64_t seed, int64_t batch,
              Metrics& base, std::vector<Metrics>& out, std::vector<Metrics>* base_folds = nullptr,
              std::vector<Metrics>* out_folds = nullptr, int folds = 10);
  // loss over all rows of ds as one batch; logits and full-shape gradients of every parameter
  double gradients(const DataSource& ds, float* logits, std::map<std::string, std::vector<float>>& grads);
  void fit_normalization(const DataSource& ds, const std::vector<int64_t>& rows);

 private:
  void ensure(int64_t B);
  void gather_dense(const DataSource& ds, const int64_t* rows, int64_t B);
  void embed(const DataSource& ds, const int64_t* rows, int64_t B, bool keep_bags);
  void mlp_forward(int64_t B, int from_layer);
  double loss_and_grad(int64_t B);
  void backward(int64_t B, bool need_emb);
  void forward_rows(const DataSource& ds, const int64_t* rows, int64_t B, bool keep_bags);
  void train_step(const DataSource& ds, const int64_t* rows, int64_t B, double* loss);
  // fast: predict / evaluate / ablate may use the bf16 eval forward; validation inside train() is FP32
  void predict_rows(const DataSource& ds, const std::vector<int64_t>& rows, int64_t batch, float* pred, bool fast);
  bool use_bf16() const { return L_ > 0 && bf16_eval_enabled(); }
  void prepare_bf16();
  // logit_[0, B) from X (B rows, stride ldx, in_dim_[l0] columns) through layers l0.. in bf16
  void mlp_forward_bf16(int64_t B, int l0, const float* X, int64_t ldx, float* zpre);
  const float* layer_in(int l) const { return l == 0 ? H0_.data() : H_[l - 1].data(); }

  ModelConfig cfg_;
  std::unique_ptr<ThreadPool> pool_;
  EmbeddingLayout emb_;
  int S_, in0_, L_;  // slots, first-layer width, hidden layers
  std::vector<int> in_dim_, out_dim_;
  // parameters
  std::vector<float> norm_mean_, norm_std_, dense_, dense_grad_, dense_m_, dense_v_;
  HugeFloatVec table_, wide_table_, sp_m_, sp_v_, wsp_m_, wsp_v_;  // random row access: huge pages
  std::vector<int64_t> w_off_, b_off_;
  int64_t wide_num_off_ = 0;
  std::vector<float> invstd_;
  std::vector<Tensor> params_, opt_;
  // workspace
  int64_t cap_ = 0;
  std::vector<float> H0_, logit_, dlogit_, wide_, label_, weight_, dA_, dB_, demb_, zbase_;
  std::vector<std::vector<float>> H_;
  std::vector<BagRef> bags_;
  SparseBackwardScratch scratch_;
  Bf16Mlp bf16_;
  bool amx_ = false;
};

}  // namespace abacus
