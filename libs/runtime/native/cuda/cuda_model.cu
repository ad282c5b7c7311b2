// CudaModel's host mirror (see cuda_model.h): a CpuModel of the same config serves initialisation,
// the normalisation fit, checkpoint / tensor views and the gradient oracle. The device copy is
// downloaded when JS asks for tensors and re-uploaded before the next GPU operation after that.
// The rest of CudaModel: device.cu (construction), train_step.cu, predict.cu, ablation.cu.
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_impl.cuh"

namespace abacus {

namespace {
const Tensor* find(std::vector<Tensor>& ts, const std::string& name) {
  for (auto& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}
}  // namespace

void CudaModel::to_host_state() {
  host_->step = step;
  host_->normalized = normalized;
  host_->frozen = frozen;
  host_->off = off;
}
void CudaModel::from_host_state() {
  step = host_->step;
  normalized = host_->normalized;
}

// device -> host mirror when the device is newer; views handed to JS may be written: re-upload
// before the next GPU operation
// The dense block (weights, Adam m / v) between the host layout (W0 with in0 columns) and the
// device layout (W0 with k0 columns, the extra ones zero): W0, then everything after it shifted.
static void dense_copy(CudaImpl& I, float* dev, float* host, int64_t host_size, bool to_dev) {
  const int64_t w0 = (int64_t)I.in0 * I.out_dim[0];
  if (host_size != I.nd - I.pad0) throw std::runtime_error("dense block size differs between host and device");
  const auto kind = to_dev ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  auto cp = [&](int64_t host_off, int64_t dev_off, int64_t n) {
    if (n > 0) to_dev ? copy_sync(dev + dev_off, host + host_off, n * 4, kind) : copy_sync(host + host_off, dev + dev_off, n * 4, kind);
  };
  cp(0, 0, w0);
  cp(w0, w0 + I.pad0, host_size - w0);
  if (to_dev && I.pad0) zero_sync(dev + w0, I.pad0 * 4);
}

void download(CudaImpl& I, CpuModel& h) {
  if (!I.host_stale) return;
  CK(cudaSetDevice(I.dev));
  CK(cudaStreamSynchronize(I.st));
  auto& P = h.params();
  auto& O = h.opt_state();
  auto get = [&](const Tensor* t, const float* src) {
    if (t && src) copy_sync(t->data, src, t->size * 4, cudaMemcpyDeviceToHost);
  };
  if (I.cached) {
    // the mirror's arrays are the tables' host store: the cached rows written back to them
    I.cache_flush(false);
  } else {
    get(find(P, "embedding.table"), I.table);
    get(find(P, "wide.table"), I.wtab);
  }
  if (const Tensor* w0 = find(P, "mlp.0.weight")) dense_copy(I, I.dense, w0->data, I.nd - I.pad0, false);
  if (const Tensor* t = find(O, "dense.adam.m")) dense_copy(I, I.dm, t->data, t->size, false);
  if (const Tensor* t = find(O, "dense.adam.v")) dense_copy(I, I.dv, t->data, t->size, false);
  if (!I.cached) {
    get(find(O, I.adam ? "sparse.adam.m.embedding" : "sparse.adagrad.acc.embedding"), I.spm);
    get(find(O, "sparse.adam.v.embedding"), I.spv);
    get(find(O, I.adam ? "sparse.adam.m.wide" : "sparse.adagrad.acc.wide"), I.wspm);
    get(find(O, "sparse.adam.v.wide"), I.wspv);
  }
  I.host_stale = false;
}
void upload(CudaImpl& I, CpuModel& h, const std::vector<uint8_t>& frozen, const std::vector<uint8_t>& off) {
  CK(cudaSetDevice(I.dev));
  if (I.upload_needed) {
    auto& P = h.params();
    auto& O = h.opt_state();
    auto put = [&](const Tensor* t, float* dst) {
      if (t && dst) copy_sync(dst, t->data, t->size * 4, cudaMemcpyHostToDevice);
    };
    if (I.cached) {
      // the mirror is the truth (a checkpoint, views written by JS): the cache starts empty
      // registering the store pins its pages, and the scan reads its optimizer state: seconds at
      // tens of GB, said when it is that long
      const double t0 = now_s();
      const bool first = !I.h_table;
      I.cache_attach(h);
      const double t1 = now_s();
      I.cache_invalidate();
      const double t2 = now_s();
      if (t2 - t0 >= 1.0 || std::getenv("ABACUS_CUDA_VERBOSE"))
        fprintf(stderr, "[abacus-cuda] embedding tables' host store: %s %.1f s, its fresh rows found in %.1f s\n",
                first ? "registered (pinned) in" : "already registered,", t1 - t0, t2 - t1);
    } else {
      put(find(P, "embedding.table"), I.table);
      put(find(P, "wide.table"), I.wtab);
    }
    if (const Tensor* w0 = find(P, "mlp.0.weight")) dense_copy(I, I.dense, w0->data, I.nd - I.pad0, true);
    if (const Tensor* t = find(O, "dense.adam.m")) dense_copy(I, I.dm, t->data, t->size, true);
    if (const Tensor* t = find(O, "dense.adam.v")) dense_copy(I, I.dv, t->data, t->size, true);
    if (!I.cached) {
      put(find(O, I.adam ? "sparse.adam.m.embedding" : "sparse.adagrad.acc.embedding"), I.spm);
      put(find(O, "sparse.adam.v.embedding"), I.spv);
      put(find(O, I.adam ? "sparse.adam.m.wide" : "sparse.adagrad.acc.wide"), I.wspm);
      put(find(O, "sparse.adam.v.wide"), I.wspv);
    }
    I.upload_needed = false;
  }
  // normalisation and frozen flags are small: compared with what was last uploaded (a few dozen
  // bytes on the host), uploaded only when they changed
  auto& P = h.params();
  if (I.N) {
    const float* m = find(P, "normalization.mean")->data;
    const float* sd = find(P, "normalization.std")->data;
    if (!I.small_valid || std::memcmp(I.up_mean.data(), m, I.N * 4) != 0 || std::memcmp(I.up_std.data(), sd, I.N * 4) != 0) {
      I.up_mean.assign(m, m + I.N);
      I.up_std.assign(sd, sd + I.N);
      CK(cudaMemcpyAsync(I.nmean, I.up_mean.data(), I.N * 4, cudaMemcpyHostToDevice, I.st));
      CK(cudaMemcpyAsync(I.nstd, I.up_std.data(), I.N * 4, cudaMemcpyHostToDevice, I.st));
    }
  }
  if (I.S && (!I.small_valid || I.up_frozen != frozen)) {
    I.up_frozen = frozen;
    CK(cudaMemcpyAsync(I.dfrozen, I.up_frozen.data(), I.S, cudaMemcpyHostToDevice, I.st));
  }
  if (I.N + I.S && (!I.small_valid || I.up_off != off)) {
    I.up_off = off;
    CK(cudaMemcpyAsync(I.doff, I.up_off.data(), I.N + I.S, cudaMemcpyHostToDevice, I.st));
  }
  I.small_valid = true;
}

std::vector<Tensor>& CudaModel::params() {
  enter(*impl_);
  try {
    download(*impl_, *host_);
  } catch (...) {
    rethrow_classified(*impl_);
  }
  impl_->upload_needed = true;
  return host_->params();
}
std::vector<Tensor>& CudaModel::opt_state() {
  enter(*impl_);
  try {
    download(*impl_, *host_);
  } catch (...) {
    rethrow_classified(*impl_);
  }
  impl_->upload_needed = true;
  return host_->opt_state();
}

void CudaModel::fit_normalization(const DataSource& ds, const std::vector<int64_t>& rows) {
  to_host_state();
  host_->fit_normalization(ds, rows);
  from_host_state();
}

double CudaModel::gradients(const DataSource& ds, float* logits, std::map<std::string, std::vector<float>>& grads) {
  // the gradient oracle runs on the host mirror (same parameters)
  enter(*impl_);
  try {
    download(*impl_, *host_);
  } catch (...) {
    rethrow_classified(*impl_);
  }
  to_host_state();
  const double r = host_->gradients(ds, logits, grads);
  from_host_state();
  impl_->upload_needed = true;
  return r;
}

void CudaModel::copy_from(CudaModel& o) {
  if (&o == this) return;
  if (!same_config(config(), o.config())) throw std::runtime_error("copyFrom: the models' configurations differ");
  CudaImpl& I = *impl_;
  CudaImpl& J = *o.impl_;
  if (I.cached || J.cached) {
    // tables in host memory on either side: through the host mirrors (the source's cached rows
    // written back first), every parameter and optimizer state copied there; this model's cache
    // starts empty and its dense block is uploaded before its next operation
    try {
      enter(J);
      download(J, *o.host_);
      enter(I);
      CK(cudaStreamSynchronize(I.st));
    } catch (...) {
      rethrow_classified(I);
    }
    for (int q = 0; q < 2; ++q) {
      auto& dst = q == 0 ? host_->params() : host_->opt_state();
      auto& src = q == 0 ? o.host_->params() : o.host_->opt_state();
      for (auto& t : dst) {
        const Tensor* f = find(src, t.name);
        if (!f || f->size != t.size) throw std::runtime_error("copyFrom: the models' tensors differ (" + t.name + ")");
        if (t.size) std::memcpy(t.data, f->data, (size_t)t.size * 4);
      }
    }
    I.upload_needed = true;
    I.host_stale = false;
    step = o.step;
    normalized = o.normalized;
    frozen = o.frozen;
    return;
  }
  try {
    // the source's device copy up to date (its host mirror may be newer: a loaded checkpoint)
    enter(J);
    upload(J, *o.host_, o.frozen, o.off);
    CK(cudaStreamSynchronize(J.st));
    enter(I);
    // nothing of this model's earlier work still reads or writes what is overwritten
    CK(cudaStreamSynchronize(I.st));
    auto cp = [&](float* dst, const float* src, int64_t n) {
      if (!dst || !src || n <= 0) return;
      if (I.dev == J.dev) CK(cudaMemcpyAsync(dst, src, (size_t)n * 4, cudaMemcpyDeviceToDevice, I.st));
      else CK(cudaMemcpyPeerAsync(dst, I.dev, src, J.dev, (size_t)n * 4, I.st));
    };
    int64_t R = 0;
    for (auto v : I.vocab) R += v;
    cp(I.table, J.table, R * I.D);
    cp(I.spm, J.spm, R * I.D);
    cp(I.spv, J.spv, R * I.D);
    if (I.wide) {
      cp(I.wtab, J.wtab, R);
      cp(I.wspm, J.wspm, R);
      cp(I.wspv, J.wspv, R);
    }
    cp(I.dense, J.dense, I.nd);
    cp(I.dm, J.dm, I.nd);
    cp(I.dv, J.dv, I.nd);
    CK(cudaStreamSynchronize(I.st));
  } catch (...) {
    rethrow_classified(I);
  }
  // the host mirror: the normalisation (kept on the host, uploaded when it changes); the rest of
  // it is older than the device now
  auto& P = host_->params();
  auto& Q = o.host_->params();
  for (const char* name : {"normalization.mean", "normalization.std"}) {
    const Tensor* d = find(P, name);
    const Tensor* s = find(Q, name);
    if (d && s && d->size == s->size && d->size) std::memcpy(d->data, s->data, (size_t)d->size * 4);
  }
  I.upload_needed = false;
  I.host_stale = true;
  step = o.step;
  normalized = o.normalized;
  frozen = o.frozen;
}

}  // namespace abacus
