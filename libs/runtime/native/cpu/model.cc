#include "model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "../common/rng.h"
#include "../common/train_split.h"
#include "gemm.h"

namespace abacus {

namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
inline float sigmoid(float z) { return 1.f / (1.f + std::exp(-z)); }
}  // namespace

CpuModel::CpuModel(const ModelConfig& cfg) : cfg_(cfg), pool_(new ThreadPool(cfg.threads)) {
  S_ = (int)cfg.vocab.size();
  L_ = (int)cfg.hidden.size();
  in0_ = cfg.num_numeric + S_ * cfg.dim;
  if (in0_ == 0) throw std::runtime_error("model has no inputs");
  emb_.dim = cfg.dim;
  emb_.mean = cfg.mean;
  int64_t rows = 0;
  for (int s = 0; s < S_; ++s) {
    emb_.base.push_back(rows);
    emb_.vocab.push_back(cfg.vocab[s]);
    rows += cfg.vocab[s];
  }
  frozen.assign(S_, 0);
  off.assign(cfg.num_numeric + S_, 0);
  const int N = cfg.num_numeric, D = cfg.dim;
  norm_mean_.assign(N, 0.f);
  norm_std_.assign(N, 1.f);
  invstd_.assign(N, 1.f);
  table_.resize(rows * D);
  // Embedding rows U(+-0.05), or N(0, 1) as PyTorch's nn.EmbeddingBag ('torch' init). Seeded per
  // 4096-row chunk, so the values do not depend on the thread count.
  const int64_t chunks = (rows + 4095) / 4096;
  pool_->run([&](int t) {
    int64_t b, e;
    ThreadPool::range(chunks, t, pool_->size(), b, e);
    for (int64_t c = b; c < e; ++c) {
      Rng r(mix_seed(cfg.seed, 1, c));
      for (int64_t i = c * 4096 * D; i < std::min(rows, (c + 1) * 4096) * D; ++i) table_[i] = cfg.torch_init ? (float)r.normal() : (float)(r.uniform() * 0.1 - 0.05);
    }
  });
  for (int l = 0; l <= L_; ++l) {
    in_dim_.push_back(l == 0 ? in0_ : cfg.hidden[l - 1]);
    out_dim_.push_back(l < L_ ? cfg.hidden[l] : 1);
  }
  int64_t off = 0;
  for (int l = 0; l <= L_; ++l) {
    w_off_.push_back(off);
    off += (int64_t)in_dim_[l] * out_dim_[l];
    b_off_.push_back(off);
    off += out_dim_[l];
  }
  wide_num_off_ = off;
  if (cfg.wide) off += N;
  dense_.assign(off, 0.f);
  dense_grad_.assign(off, 0.f);
  dense_m_.assign(off, 0.f);
  dense_v_.assign(off, 0.f);
  Rng r(mix_seed(cfg.seed, 2));
  // default: Glorot uniform, zero bias; 'torch': nn.Linear's weight and bias U(+-1/sqrt(fan_in))
  for (int l = 0; l <= L_; ++l) {
    const double a = cfg.torch_init ? 1.0 / std::sqrt((double)in_dim_[l]) : std::sqrt(6.0 / (in_dim_[l] + out_dim_[l]));
    for (int64_t i = 0; i < (int64_t)in_dim_[l] * out_dim_[l]; ++i) dense_[w_off_[l] + i] = (float)((r.uniform() * 2 - 1) * a);
    if (cfg.torch_init)
      for (int i = 0; i < out_dim_[l]; ++i) dense_[b_off_[l] + i] = (float)((r.uniform() * 2 - 1) * a);
  }
  // the row arrays filled on the pool's threads (at 10^8-10^9 rows, tens of GB first touched)
  auto fill = [&](HugeFloatVec& v, int64_t n, float x) {
    v.resize(n);
    pool_->run([&](int t) {
      int64_t b, e;
      ThreadPool::range(n, t, pool_->size(), b, e, int64_t(1) << 16);
      std::fill(v.data() + b, v.data() + e, x);
    });
  };
  if (cfg.wide) fill(wide_table_, rows, 0.f);
  const bool adam = cfg.sparse.kind == 1;
  fill(sp_m_, rows * D, adam ? 0.f : cfg.sparse.init_acc);
  if (adam) fill(sp_v_, rows * D, 0.f);
  if (cfg.wide) {
    fill(wsp_m_, rows, adam ? 0.f : cfg.sparse.init_acc);
    if (adam) fill(wsp_v_, rows, 0.f);
  }

  params_.push_back({"normalization.mean", {N}, norm_mean_.data(), N});
  params_.push_back({"normalization.std", {N}, norm_std_.data(), N});
  params_.push_back({"embedding.table", {rows, D}, table_.data(), rows * D});
  if (cfg.wide) {
    params_.push_back({"wide.table", {rows}, wide_table_.data(), rows});
    params_.push_back({"wide.numeric", {N}, dense_.data() + wide_num_off_, N});
  }
  for (int l = 0; l <= L_; ++l) {
    std::string p = "mlp." + std::to_string(l);
    params_.push_back({p + ".weight", {in_dim_[l], out_dim_[l]}, dense_.data() + w_off_[l], (int64_t)in_dim_[l] * out_dim_[l]});
    params_.push_back({p + ".bias", {out_dim_[l]}, dense_.data() + b_off_[l], out_dim_[l]});
  }
  int64_t nd = (int64_t)dense_.size();
  opt_.push_back({"dense.adam.m", {nd}, dense_m_.data(), nd});
  opt_.push_back({"dense.adam.v", {nd}, dense_v_.data(), nd});
  opt_.push_back({adam ? "sparse.adam.m.embedding" : "sparse.adagrad.acc.embedding", {rows, D}, sp_m_.data(), rows * D});
  if (adam) opt_.push_back({"sparse.adam.v.embedding", {rows, D}, sp_v_.data(), rows * D});
  if (cfg.wide) {
    opt_.push_back({adam ? "sparse.adam.m.wide" : "sparse.adagrad.acc.wide", {rows}, wsp_m_.data(), rows});
    if (adam) opt_.push_back({"sparse.adam.v.wide", {rows}, wsp_v_.data(), rows});
  }
}

void CpuModel::ensure(int64_t B) {
  if (B <= cap_) return;
  cap_ = B;
  H0_.assign(B * in0_, 0.f);
  H_.resize(L_);
  int maxw = in0_;
  for (int l = 0; l < L_; ++l) { H_[l].assign(B * cfg_.hidden[l], 0.f); maxw = std::max(maxw, cfg_.hidden[l]); }
  logit_.assign(B, 0.f);
  dlogit_.assign(B, 0.f);
  wide_.assign(B, 0.f);
  label_.assign(B, 0.f);
  weight_.assign(B, 1.f);
  dA_.assign(B * maxw, 0.f);
  dB_.assign(B * maxw, 0.f);
  demb_.assign(B * std::max(1, S_ * cfg_.dim), 0.f);
  if (L_ > 0) zbase_.assign(B * cfg_.hidden[0], 0.f);
  bags_.resize(B * std::max(1, S_));
}

void CpuModel::fit_normalization(const DataSource& ds, const std::vector<int64_t>& rows) {
  const int N = cfg_.num_numeric;
  if (N == 0 || rows.empty()) { normalized = true; return; }
  const int T = pool_->size();
  std::vector<double> sum(T * N, 0.0), sq(T * N, 0.0);
  // rows from mapped shards: a chunk at a time, its pages released after it (in memory: one chunk)
  const int64_t chunk = ds.mapped() ? kReleaseEvery : std::max<int64_t>(1, (int64_t)rows.size());
  for (int64_t c0 = 0; c0 < (int64_t)rows.size(); c0 += chunk) {
  const int64_t c1 = std::min<int64_t>((int64_t)rows.size(), c0 + chunk);
  pool_->run([&](int t) {
    int64_t b, e;
    ThreadPool::range(c1 - c0, t, T, b, e);
    b += c0;
    e += c0;
    for (int64_t i = b; i < e; ++i) {
      int64_t local;
      const DataPart& p = ds.locate(rows[i], local);
      const float* x = p.numeric + local * p.num_stride;
      for (int j = 0; j < N; ++j) {
        double v = x[ds.num_map[j]];
        if (!std::isfinite(v)) v = 0;
        sum[t * N + j] += v;
        sq[t * N + j] += v * v;
      }
    }
  });
  ds.release();
  }
  const double n = (double)rows.size();
  for (int j = 0; j < N; ++j) {
    double s = 0, q = 0;
    for (int t = 0; t < T; ++t) { s += sum[t * N + j]; q += sq[t * N + j]; }
    double mean = s / n, var = std::max(0.0, q / n - mean * mean), sd = std::sqrt(var);
    norm_mean_[j] = (float)mean;
    norm_std_[j] = sd > 1e-6 ? (float)sd : 1.f;
  }
  normalized = true;
}

void CpuModel::gather_dense(const DataSource& ds, const int64_t* rows, int64_t B) {
  const int N = cfg_.num_numeric;
  for (int j = 0; j < N; ++j) invstd_[j] = 1.f / norm_std_[j];
  const float* wn = cfg_.wide ? dense_.data() + wide_num_off_ : nullptr;
  pool_->run([&](int t) {
    int64_t b, e;
    ThreadPool::range(B, t, pool_->size(), b, e);
    for (int64_t r = b; r < e; ++r) {
      int64_t local;
      const DataPart& p = ds.locate(rows[r], local);
      float* h = H0_.data() + r * in0_;
      float w = 0.f;
      if (N) {
        const float* x = p.numeric + local * p.num_stride;
        for (int j = 0; j < N; ++j) {
          float v = x[ds.num_map[j]];
          h[j] = std::isfinite(v) && !off[j] ? (v - norm_mean_[j]) * invstd_[j] : 0.f;
          if (wn) w += wn[j] * h[j];
        }
      }
      wide_[r] = w;
      label_[r] = p.labels[local];
      weight_[r] = p.weights ? p.weights[local] : 1.f;
    }
  });
}

void CpuModel::embed(const DataSource& ds, const int64_t* rows, int64_t B, bool keep_bags) {
  if (S_ == 0) return;
  std::vector<int> slots(S_);
  for (int s = 0; s < S_; ++s) slots[s] = s;
  std::vector<const int64_t*> src(S_, rows);
  emb_.off = off.data() + cfg_.num_numeric;
  int64_t bad_id = 0;
  int bad_slot = 0;
  if (!embedding_bag_forward(*pool_, ds, emb_, table_.data(), cfg_.wide ? wide_table_.data() : nullptr, slots, src, B,
                             H0_.data(), in0_, cfg_.num_numeric, keep_bags ? bags_.data() : nullptr,
                             cfg_.wide ? wide_.data() : nullptr, &bad_id, &bad_slot))
    throw std::runtime_error("slot #" + std::to_string(bad_slot) + ": id " + std::to_string(bad_id) +
                             " is outside its vocabulary (" + std::to_string(emb_.vocab[bad_slot]) + " rows)");
}

void CpuModel::mlp_forward(int64_t B, int from_layer) {
  for (int l = from_layer; l < L_; ++l) {
    Epilogue ep;
    ep.bias = dense_.data() + b_off_[l];
    ep.relu = true;
    sgemm(*pool_, B, out_dim_[l], in_dim_[l], {layer_in(l), in_dim_[l], 1}, {dense_.data() + w_off_[l], out_dim_[l], 1},
          H_[l].data(), out_dim_[l], false, ep);
  }
  const float* h = layer_in(L_);
  const int n = in_dim_[L_];
  const float* w = dense_.data() + w_off_[L_];
  const float bias = dense_[b_off_[L_]];
  pool_->run([&](int t) {
    int64_t b, e;
    ThreadPool::range(B, t, pool_->size(), b, e);
    for (int64_t r = b; r < e; ++r) {
      const float* hr = h + r * n;
      float s = 0.f;
      for (int j = 0; j < n; ++j) s += hr[j] * w[j];
      logit_[r] = s + bias + wide_[r];
    }
  });
}

void CpuModel::forward_rows(const DataSource& ds, const int64_t* rows, int64_t B, bool keep_bags) {
  ensure(B);
  gather_dense(ds, rows, B);
  embed(ds, rows, B, keep_bags);
  mlp_forward(B, 0);
}

double CpuModel::loss_and_grad(int64_t B) {
  double wsum = 0;
  for (int64_t r = 0; r < B; ++r) wsum += weight_[r];
  if (wsum <= 0) wsum = 1;
  const float inv = (float)(1.0 / wsum);
  const int T = pool_->size();
  std::vector<double> part(T, 0.0);
  pool_->run([&](int t) {
    int64_t b, e;
    ThreadPool::range(B, t, T, b, e);
    double acc = 0;
    for (int64_t r = b; r < e; ++r) {
      const float z = logit_[r], y = label_[r], w = weight_[r];
      acc += w * (std::max(z, 0.f) - z * y + std::log1p(std::exp(-std::fabs(z))));
      dlogit_[r] = w * (sigmoid(z) - y) * inv;
    }
    part[t] = acc;
  });
  double loss = 0;
  for (double p : part) loss += p;
  return loss / wsum;
}

void CpuModel::backward(int64_t B, bool need_emb) {
  const int T = pool_->size();
  float* g = dense_grad_.data();
  // output layer (width 1): weight grad = H^T dlogit, per-thread partial sums combined in order
  {
    const float* h = layer_in(L_);
    const int n = in_dim_[L_];
    std::vector<double> part((size_t)T * (n + 1), 0.0);
    pool_->run([&](int t) {
      int64_t b, e;
      ThreadPool::range(B, t, T, b, e);
      double* acc = part.data() + (size_t)t * (n + 1);
      std::vector<float> accf(n, 0.f);
      float bs = 0.f;
      for (int64_t r = b; r < e; ++r) {
        const float d = dlogit_[r];
        const float* hr = h + r * n;
        for (int j = 0; j < n; ++j) accf[j] += hr[j] * d;
        bs += d;
      }
      for (int j = 0; j < n; ++j) acc[j] = accf[j];
      acc[n] = bs;
    });
    for (int j = 0; j <= n; ++j) {
      double s = 0;
      for (int t = 0; t < T; ++t) s += part[(size_t)t * (n + 1) + j];
      if (j < n) g[w_off_[L_] + j] = (float)s; else g[b_off_[L_]] = (float)s;
    }
  }
  const float* wout = dense_.data() + w_off_[L_];
  float* dcur = dA_.data();
  float* dnext = dB_.data();
  const int D = cfg_.dim, N = cfg_.num_numeric;
  if (L_ > 0) {
    const float* h = layer_in(L_);
    const int n = in_dim_[L_];
    pool_->run([&](int t) {
      int64_t b, e;
      ThreadPool::range(B, t, T, b, e);
      for (int64_t r = b; r < e; ++r)
        for (int j = 0; j < n; ++j) dcur[r * n + j] = h[r * n + j] > 0.f ? dlogit_[r] * wout[j] : 0.f;
    });
  } else if (need_emb) {
    for (int64_t r = 0; r < B; ++r)
      for (int c = 0; c < S_ * D; ++c) demb_[r * S_ * D + c] = dlogit_[r] * wout[N + c];
  }
  for (int l = L_ - 1; l >= 0; --l) {
    const int ni = in_dim_[l], no = out_dim_[l];
    const float* hin = layer_in(l);
    sgemm(*pool_, ni, no, B, {hin, 1, ni}, {dcur, no, 1}, g + w_off_[l], no, false);
    // bias grad: each thread owns a column range and sums rows in order
    pool_->run([&](int t) {
      int64_t jb, je;
      ThreadPool::range(no, t, T, jb, je, 16);
      if (jb >= je) return;
      std::vector<float> acc(je - jb, 0.f);
      for (int64_t r = 0; r < B; ++r) {
        const float* d = dcur + r * no;
        for (int64_t j = jb; j < je; ++j) acc[j - jb] += d[j];
      }
      for (int64_t j = jb; j < je; ++j) g[b_off_[l] + j] = acc[j - jb];
    });
    const float* W = dense_.data() + w_off_[l];
    if (l > 0) {
      Epilogue ep;
      ep.mask = hin;
      ep.ldmask = ni;
      sgemm(*pool_, B, ni, no, {dcur, no, 1}, {W, 1, no}, dnext, ni, false, ep);
      std::swap(dcur, dnext);
    } else if (need_emb) {
      sgemm(*pool_, B, S_ * D, no, {dcur, no, 1}, {W + (int64_t)N * no, 1, no}, demb_.data(), S_ * D, false);
    }
  }
  if (cfg_.wide && N) {
    std::vector<double> part((size_t)T * N, 0.0);
    pool_->run([&](int t) {
      int64_t b, e;
      ThreadPool::range(B, t, T, b, e);
      for (int64_t r = b; r < e; ++r)
        for (int j = 0; j < N; ++j) part[(size_t)t * N + j] += (double)dlogit_[r] * H0_[r * in0_ + j];
    });
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int t = 0; t < T; ++t) s += part[(size_t)t * N + j];
      g[wide_num_off_ + j] = (float)s;
    }
  }
}

void CpuModel::train_step(const DataSource& ds, const int64_t* rows, int64_t B, double* loss) {
  forward_rows(ds, rows, B, true);
  *loss = loss_and_grad(B);
  bool any_trainable = false;
  for (auto f : frozen) any_trainable |= !f;
  backward(B, any_trainable);
  ++step;
  if (any_trainable)
    embedding_bag_backward_update(*pool_, emb_, bags_.data(), S_, frozen, B, demb_.data(), (int64_t)S_ * cfg_.dim,
                                  cfg_.wide ? dlogit_.data() : nullptr, table_.data(),
                                  cfg_.wide ? wide_table_.data() : nullptr, {sp_m_.data(), sp_v_.empty() ? nullptr : sp_v_.data()},
                                  {wsp_m_.empty() ? nullptr : wsp_m_.data(), wsp_v_.empty() ? nullptr : wsp_v_.data()},
                                  cfg_.sparse, step, scratch_, nullptr, nullptr);
  dense_adam(*pool_, dense_.data(), dense_grad_.data(), dense_m_.data(), dense_v_.data(), (int64_t)dense_.size(), cfg_.dense, step);
}

void CpuModel::prepare_bf16() {
  std::vector<const float*> W, b;
  for (int l = 0; l < L_; ++l) {
    W.push_back(dense_.data() + w_off_[l]);
    b.push_back(dense_.data() + b_off_[l]);
  }
  bf16_pack(bf16_, W, b, in_dim_, out_dim_, dense_.data() + w_off_[L_], dense_[b_off_[L_]]);
  amx_ = eval_kernel() == 2;
}

void CpuModel::mlp_forward_bf16(int64_t B, int l0, const float* X, int64_t ldx, float* zpre) {
  const int64_t ldz = L_ > 0 ? cfg_.hidden[0] : 0;
  pool_->run([&](int t) {
    int64_t b, e;
    ThreadPool::range(B, t, pool_->size(), b, e, 12);
    if (e > b) bf16_mlp_rows(bf16_, amx_, l0, X + b * ldx, ldx, e - b, wide_.data() + b, logit_.data() + b, zpre ? zpre + b * ldz : nullptr, ldz);
  });
}

void CpuModel::predict_rows(const DataSource& ds, const std::vector<int64_t>& rows, int64_t batch, float* pred, bool fast) {
  const int64_t n = (int64_t)rows.size();
  const bool bf = fast && use_bf16();
  if (bf) prepare_bf16();
  int64_t released = 0;
  for (int64_t b0 = 0; b0 < n; b0 += batch) {
    const int64_t B = std::min(batch, n - b0);
    if (ds.mapped() && b0 - released >= kReleaseEvery) {
      ds.release();
      released = b0;
    }
    if (bf) {
      ensure(B);
      gather_dense(ds, rows.data() + b0, B);
      embed(ds, rows.data() + b0, B, false);
      mlp_forward_bf16(B, 0, H0_.data(), in0_, nullptr);
    } else {
      forward_rows(ds, rows.data() + b0, B, false);
    }
    for (int64_t r = 0; r < B; ++r) pred[b0 + r] = sigmoid(logit_[r]);
    if (cancel.load()) throw std::runtime_error("cancelled");
  }
  if (ds.mapped()) ds.release();
}

void CpuModel::predict(const DataSource& ds, int64_t batch, float* pred, float* label, float* weight, int32_t* key) {
  std::vector<int64_t> rows(ds.rows);
  for (int64_t i = 0; i < ds.rows; ++i) rows[i] = i;
  predict_rows(ds, rows, batch, pred, true);
  for (int64_t i = 0; i < ds.rows && (label || weight || key); ++i) {
    int64_t local;
    const DataPart& p = ds.locate(i, local);
    if (label) label[i] = p.labels[local];
    if (weight) weight[i] = p.weights ? p.weights[local] : 1.f;
    if (key) key[i] = p.key ? p.key[local] : 0;
  }
}

TrainResult CpuModel::train(const DataSource& tr, const DataSource* val, const TrainOptions& o,
                            const std::function<void(const Progress&)>& progress) {
  const double ts = now_s();
  TrainResult res;
  std::vector<int64_t> train_rows, val_rows;
  const DataSource* vds = split_train_val(tr, val, o.val_fraction, o.seed, train_rows, val_rows);
  res.train_rows = (int64_t)train_rows.size();
  res.val_rows = (int64_t)val_rows.size();
  if (train_rows.empty()) throw std::runtime_error("no training rows");
  if (!normalized) fit_normalization(tr, train_rows);
  const int64_t n = (int64_t)train_rows.size();
  const int64_t steps_per_epoch = (n + o.batch - 1) / o.batch;
  int64_t total = steps_per_epoch * o.epochs;
  if (o.max_steps >= 0) total = std::min(total, o.max_steps);
  std::vector<float> best_snapshot;
  double best = 0;
  int bad_epochs = 0;
  const double t0 = now_s();
  res.setup_seconds = t0 - ts;
  double window_loss = 0;
  int64_t window_steps = 0;
  std::vector<int64_t> order, ends;
  std::vector<float> vpred;
  bool have_best = false;
  // the validation rows' metrics after epoch `ep` (-1: before the first step), kept as the best
  // (and its weights as the snapshot to restore) when they improve on it
  auto validate = [&](int ep, EpochRecord& rec) {
    vpred.resize(val_rows.size());
    predict_rows(*vds, val_rows, std::max<int64_t>(o.batch, 4096), vpred.data(), false);
    std::vector<float> lab(val_rows.size()), w;
    bool hw = vds->has_weights();
    if (hw) w.resize(val_rows.size());
    for (size_t i = 0; i < val_rows.size(); ++i) {
      int64_t local;
      const DataPart& p = vds->locate(val_rows[i], local);
      lab[i] = p.labels[local];
      if (hw) w[i] = p.weights[local];
    }
    Metrics m = compute_metrics(vpred.data(), lab.data(), hw ? w.data() : nullptr, (int64_t)val_rows.size());
    rec.val_auc = m.auc;
    rec.val_logloss = m.logloss;
    const double score = o.es_on_logloss ? -m.logloss : m.auc;
    if (!have_best || score > best + o.min_delta) {
      have_best = true;
      best = score;
      res.best_epoch = ep;
      res.best_val_auc = m.auc;
      res.best_val_logloss = m.logloss;
      bad_epochs = 0;
      if (o.patience > 0 && o.restore_best) {
        best_snapshot.assign(table_.begin(), table_.end());
        best_snapshot.insert(best_snapshot.end(), dense_.begin(), dense_.end());
        best_snapshot.insert(best_snapshot.end(), wide_table_.begin(), wide_table_.end());
      }
    } else {
      ++bad_epochs;
    }
  };
  if (o.eval_first && vds && !val_rows.empty()) {
    const double tv = now_s();
    EpochRecord rec{-1, NAN, NAN, NAN, 0};
    validate(-1, rec);
    res.initial_val_auc = rec.val_auc;
    res.initial_val_logloss = rec.val_logloss;
    res.eval_seconds += now_s() - tv;
  }
  for (int ep = 0; ep < o.epochs && res.steps < total; ++ep) {
    const double te = now_s();
    epoch_order(train_rows, o.shuffle, tr.mapped(), o.seed, ep, order, ends);
    size_t window = 0;
    double epoch_loss = 0;
    int64_t epoch_steps = 0;
    for (int64_t b0 = 0; b0 < n && res.steps < total; b0 += o.batch) {
      if (cancel.load()) { res.cancelled = true; break; }
      // from mapped shards: past a window's end its pages are released (a batch may span two windows)
      if (tr.mapped() && window + 1 < ends.size() && b0 >= ends[window]) {
        tr.release();
        while (window + 1 < ends.size() && b0 >= ends[window]) ++window;
      }
      const int64_t B = std::min(o.batch, n - b0);
      double loss;
      train_step(tr, order.data() + b0, B, &loss);
      res.steps++;
      res.samples += B;
      epoch_loss += loss;
      epoch_steps++;
      window_loss += loss;
      window_steps++;
      res.final_loss = loss;
      if (progress && o.progress_every > 0 && res.steps % o.progress_every == 0) {
        progress({ep, res.steps, total, window_loss / window_steps, res.samples / (now_s() - t0), false, NAN, NAN});
        window_loss = 0;
        window_steps = 0;
      }
    }
    res.epochs = ep + 1;
    if (tr.mapped()) tr.release();
    EpochRecord rec{ep, epoch_steps ? epoch_loss / epoch_steps : NAN, NAN, NAN, 0};
    if (res.cancelled) { rec.seconds = now_s() - te; res.history.push_back(rec); break; }
    const double tv = now_s();
    if (vds && !val_rows.empty()) validate(ep, rec);
    res.eval_seconds += now_s() - tv;
    rec.seconds = now_s() - te;
    res.history.push_back(rec);
    if (progress) progress({ep, res.steps, total, rec.train_loss, res.samples / (now_s() - t0), true, rec.val_auc, rec.val_logloss});
    if (o.patience > 0 && bad_epochs >= o.patience) { res.stopped_early = true; break; }
  }
  if (!best_snapshot.empty() && res.best_epoch != res.epochs - 1 && !res.cancelled) {
    std::copy(best_snapshot.begin(), best_snapshot.begin() + table_.size(), table_.begin());
    std::copy(best_snapshot.begin() + table_.size(), best_snapshot.begin() + table_.size() + dense_.size(), dense_.begin());
    std::copy(best_snapshot.begin() + table_.size() + dense_.size(), best_snapshot.end(), wide_table_.begin());
  }
  res.seconds = now_s() - t0;
  res.samples_per_s = res.samples / res.seconds;
  return res;
}

void CpuModel::ablate(const DataSource& ds, const std::vector<AblationGroup>& groups, int repeats, uint64_t seed,
                      int64_t batch, Metrics& base, std::vector<Metrics>& out, std::vector<Metrics>* base_folds,
                      std::vector<Metrics>* out_folds, int folds) {
  for (auto f : off)
    if (f) throw std::runtime_error("ablate: this model has inputs switched off; switch them on first");
  // contiguous evaluation folds: the spread of per-fold changes carries the evaluation-set noise
  const int F = (int)std::max<int64_t>(1, std::min<int64_t>(folds, ds.rows / 200));
  auto fold_metrics = [&](const float* pred, const float* lab, const float* w, std::vector<Metrics>& dst) {
    for (int f = 0; f < F; ++f) {
      const int64_t b = ds.rows * f / F, e = ds.rows * (f + 1) / F;
      dst.push_back(compute_metrics(pred + b, lab + b, w ? w + b : nullptr, e - b));
    }
  };
  if (base_folds) base_folds->clear();
  if (out_folds) out_folds->clear();
  const int64_t n = ds.rows;
  const int G = (int)groups.size(), C = G * repeats, N = cfg_.num_numeric, D = cfg_.dim;
  std::vector<float> label(n), weight(n), base_pred(n);
  const bool hw = ds.has_weights();
  std::vector<int64_t> all(n);
  for (int64_t i = 0; i < n; ++i) all[i] = i;
  // Predictions for a chunk of configurations are kept (chunk * n floats), then scored.
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(C, (int64_t(1) << 26) / std::max<int64_t>(n, 1)));
  out.assign(C, Metrics{});
  // Per group: the first-layer weight rows of its inputs (the only part that changes)
  std::vector<std::vector<float>> wg(G);
  const int h1 = L_ > 0 ? cfg_.hidden[0] : 1;
  const float* W0 = dense_.data() + w_off_[0];
  for (int g = 0; g < G; ++g) {
    std::vector<int> cols;
    for (int j : groups[g].numeric) cols.push_back(j);
    for (int s : groups[g].slots)
      for (int d = 0; d < D; ++d) cols.push_back(N + s * D + d);
    wg[g].resize(cols.size() * h1);
    for (size_t c = 0; c < cols.size(); ++c) std::memcpy(&wg[g][c * h1], W0 + (int64_t)cols[c] * h1, sizeof(float) * h1);
  }
  const bool bf = use_bf16();
  if (bf) prepare_bf16();
  std::vector<float> dperm, dbase, wperm, wbase, preds;
  std::vector<int64_t> src(batch);
  for (int64_t c0 = 0; c0 < C; c0 += chunk) {
    const int64_t cn = std::min(chunk, C - c0);
    std::vector<std::vector<int64_t>> perms(cn);
    for (int64_t c = 0; c < cn; ++c) {
      const int g = (int)((c0 + c) / repeats), r = (int)((c0 + c) % repeats);
      seeded_permutation(perms[c], n, mix_seed(seed, 101 + g, r));
    }
    preds.assign(cn * n, 0.f);
    for (int64_t b0 = 0; b0 < n; b0 += batch) {
      if (cancel.load()) throw std::runtime_error("cancelled");
      const int64_t B = std::min(batch, n - b0);
      const int64_t* rows = all.data() + b0;
      ensure(B);
      gather_dense(ds, rows, B);
      embed(ds, rows, B, false);
      if (bf) {  // logits, and the first layer's pre-activation, in the same pass as predict()
        mlp_forward_bf16(B, 0, H0_.data(), in0_, zbase_.data());
      } else {
        if (L_ > 0) {  // first layer without ReLU: keep the pre-activation
          Epilogue ep;
          ep.bias = dense_.data() + b_off_[0];
          sgemm(*pool_, B, h1, in0_, {H0_.data(), in0_, 1}, {W0, h1, 1}, zbase_.data(), h1, false, ep);
          for (int64_t i = 0; i < B * h1; ++i) H_[0][i] = std::max(zbase_[i], 0.f);
        }
        mlp_forward(B, L_ > 0 ? 1 : 0);
      }
      if (c0 == 0)
        for (int64_t r = 0; r < B; ++r) {
          base_pred[b0 + r] = sigmoid(logit_[r]);
          label[b0 + r] = label_[r];
          weight[b0 + r] = weight_[r];
        }
      const std::vector<float> wide_base(wide_.begin(), wide_.begin() + B);
      const std::vector<float> H0_base = L_ > 0 ? std::vector<float>() : std::vector<float>(H0_.begin(), H0_.begin() + B * in0_);
      for (int64_t c = 0; c < cn; ++c) {
        if (L_ == 0) std::memcpy(H0_.data(), H0_base.data(), sizeof(float) * B * in0_);
        const AblationGroup& grp = groups[(c0 + c) / repeats];
        const int gw = (int)grp.numeric.size() + (int)grp.slots.size() * D;
        for (int64_t r = 0; r < B; ++r) src[r] = perms[c][b0 + r];
        dperm.assign(B * gw, 0.f);
        dbase.assign(B * gw, 0.f);
        wperm.assign(B, 0.f);
        wbase.assign(B, 0.f);
        // numeric inputs of the group, from the permuted row
        const float* wn = cfg_.wide ? dense_.data() + wide_num_off_ : nullptr;
        for (int64_t r = 0; r < B; ++r) {
          int64_t local;
          const DataPart& p = ds.locate(src[r], local);
          for (size_t k = 0; k < grp.numeric.size(); ++k) {
            const int j = grp.numeric[k];
            float v = p.numeric[local * p.num_stride + ds.num_map[j]];
            v = std::isfinite(v) ? (v - norm_mean_[j]) / norm_std_[j] : 0.f;
            const float vb = H0_[r * in0_ + j];
            dperm[r * gw + k] = v;
            dbase[r * gw + k] = vb;
            if (wn) { wperm[r] += wn[j] * v; wbase[r] += wn[j] * vb; }
          }
        }
        if (!grp.slots.empty()) {
          std::vector<const int64_t*> sp(grp.slots.size(), src.data()), sb(grp.slots.size(), rows);
          int64_t bad_id;
          int bad_slot;
          const int col0 = (int)grp.numeric.size();
          const float* wt = cfg_.wide ? wide_table_.data() : nullptr;
          embedding_bag_forward(*pool_, ds, emb_, table_.data(), wt, grp.slots, sp, B, dperm.data(), gw, col0, nullptr,
                                wt ? wperm.data() : nullptr, &bad_id, &bad_slot);
          embedding_bag_forward(*pool_, ds, emb_, table_.data(), wt, grp.slots, sb, B, dbase.data(), gw, col0, nullptr,
                                wt ? wbase.data() : nullptr, &bad_id, &bad_slot);
        }
        for (int64_t i = 0; i < B * gw; ++i) dperm[i] -= dbase[i];
        for (int64_t r = 0; r < B; ++r) wide_[r] = wide_base[r] + wperm[r] - wbase[r];
        if (L_ > 0) {
          // first layer is linear: swap in the group's contribution, keep everything else
          std::memcpy(H_[0].data(), zbase_.data(), sizeof(float) * B * h1);
          Epilogue ep;
          ep.relu = true;
          sgemm(*pool_, B, h1, gw, {dperm.data(), gw, 1}, {wg[(c0 + c) / repeats].data(), h1, 1}, H_[0].data(), h1, true, ep);
          if (bf)
            mlp_forward_bf16(B, 1, H_[0].data(), h1, nullptr);
          else
            mlp_forward(B, 1);
        } else {
          std::memcpy(H0_.data(), H0_base.data(), sizeof(float) * B * in0_);
          std::vector<int> cols;
          for (int j : grp.numeric) cols.push_back(j);
          for (int s : grp.slots)
            for (int d = 0; d < D; ++d) cols.push_back(N + s * D + d);
          for (int64_t r = 0; r < B; ++r)
            for (size_t k = 0; k < cols.size(); ++k) H0_[r * in0_ + cols[k]] += dperm[r * gw + k];
          mlp_forward(B, 0);
        }
        for (int64_t r = 0; r < B; ++r) preds[c * n + b0 + r] = sigmoid(logit_[r]);
      }
    }
    if (c0 == 0) {
      base = compute_metrics(base_pred.data(), label.data(), hw ? weight.data() : nullptr, n);
      if (base_folds) fold_metrics(base_pred.data(), label.data(), hw ? weight.data() : nullptr, *base_folds);
    }
    for (int64_t c = 0; c < cn; ++c) {
      out[c0 + c] = compute_metrics(preds.data() + c * n, label.data(), hw ? weight.data() : nullptr, n);
      if (out_folds) fold_metrics(preds.data() + c * n, label.data(), hw ? weight.data() : nullptr, *out_folds);
    }
  }
  if (C == 0) {
    predict_rows(ds, all, batch, base_pred.data(), true);
    for (int64_t i = 0; i < n; ++i) {
      int64_t local;
      const DataPart& p = ds.locate(i, local);
      label[i] = p.labels[local];
      weight[i] = p.weights ? p.weights[local] : 1.f;
    }
    base = compute_metrics(base_pred.data(), label.data(), hw ? weight.data() : nullptr, n);
  }
  if (ds.mapped()) ds.release();
}

double CpuModel::gradients(const DataSource& ds, float* logits, std::map<std::string, std::vector<float>>& grads) {
  const int64_t B = ds.rows;
  std::vector<int64_t> rows(B);
  for (int64_t i = 0; i < B; ++i) rows[i] = i;
  if (!normalized) fit_normalization(ds, rows);
  forward_rows(ds, rows.data(), B, true);
  const double loss = loss_and_grad(B);
  backward(B, S_ > 0);
  std::memcpy(logits, logit_.data(), sizeof(float) * B);
  for (auto& t : params_) {
    if (t.data >= dense_.data() && t.data < dense_.data() + dense_.size())
      grads[t.name].assign(dense_grad_.begin() + (t.data - dense_.data()), dense_grad_.begin() + (t.data - dense_.data()) + t.size);
  }
  auto& ge = grads["embedding.table"];
  ge.assign(table_.size(), 0.f);
  std::vector<float>* gw = nullptr;
  if (cfg_.wide) { gw = &grads["wide.table"]; gw->assign(wide_table_.size(), 0.f); }
  std::vector<uint8_t> none(S_, 0);
  if (S_ > 0)
    embedding_bag_backward_update(*pool_, emb_, bags_.data(), S_, none, B, demb_.data(), (int64_t)S_ * cfg_.dim,
                                  cfg_.wide ? dlogit_.data() : nullptr, table_.data(), nullptr, {nullptr, nullptr},
                                  {nullptr, nullptr}, cfg_.sparse, 1, scratch_, ge.data(), gw ? gw->data() : nullptr);
  return loss;
}

}  // namespace abacus

namespace abacus {
bool same_config(const ModelConfig& a, const ModelConfig& b) {
  return a.num_numeric == b.num_numeric && a.vocab == b.vocab && a.dim == b.dim && a.mean == b.mean && a.wide == b.wide &&
         a.hidden == b.hidden && a.sparse.kind == b.sparse.kind;
}

void CpuModel::copy_from(CpuModel& o) {
  if (&o == this) return;
  if (!same_config(cfg_, o.cfg_)) throw std::runtime_error("copyFrom: the models' configurations differ");
  auto copy = [](std::vector<Tensor>& dst, std::vector<Tensor>& src) {
    if (dst.size() != src.size()) throw std::runtime_error("copyFrom: the models' tensors differ");
    for (size_t i = 0; i < dst.size(); ++i) {
      if (dst[i].size != src[i].size || dst[i].name != src[i].name) throw std::runtime_error("copyFrom: tensor " + dst[i].name + " differs");
      if (dst[i].size) std::memcpy(dst[i].data, src[i].data, (size_t)dst[i].size * sizeof(float));
    }
  };
  copy(params_, o.params_);
  copy(opt_, o.opt_);
  step = o.step;
  normalized = o.normalized;
  frozen = o.frozen;
}
}  // namespace abacus
