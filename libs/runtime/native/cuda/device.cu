// CUDA device selection and setup: cuBLASLt loaded at run time (dlopen), device queries, and the
// CudaModel constructor / destructor (device, stream, cuBLASLt handle and workspace, the switches
// read from the environment, parameters and optimizer state allocated on the device).
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_impl.cuh"

namespace abacus {

namespace {
thread_local int g_next_device = 0;
constexpr int kMaxDevices = 64;
// per device: 0 while the process's context is usable, else the sticky error that ended it
std::atomic<int> g_lost[kMaxDevices];
std::mutex g_lt_mu;
lt::Handle g_lt[kMaxDevices] = {};

std::string error_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }
std::string lost_message(int dev, cudaError_t e) {
  const std::string why = e == cudaErrorUnknown ? "an earlier error the runtime could not prove harmless" : error_text(e);
  return std::string(kCudaContextLostTag) + " device " + std::to_string(dev) + ", " + why +
         ": this process's CUDA context is unusable; restart the process";
}
void mark_lost(int dev, cudaError_t e) {
  int expected = 0;
  if (dev >= 0 && dev < kMaxDevices) g_lost[dev].compare_exchange_strong(expected, (int)e);
}
}  // namespace

const char* const kCudaContextLostTag = "[cuda-context-lost]";

bool cuda_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

std::string cuda_context_lost(int d) {
  if (d < 0 || d >= kMaxDevices) return "";
  const int e = g_lost[d].load();
  return e ? lost_message(d, (cudaError_t)e) : "";
}

lt::Handle shared_lt_handle(const lt::Api* api, int dev) {
  if (dev < 0 || dev >= kMaxDevices) throw std::runtime_error("CUDA backend: device index " + std::to_string(dev) + " out of range");
  std::lock_guard<std::mutex> g(g_lt_mu);
  if (!g_lt[dev] && api->create(&g_lt[dev]) != 0) {
    g_lt[dev] = nullptr;
    throw std::runtime_error("cublasLtCreate failed");
  }
  return g_lt[dev];
}

void enter(CudaImpl& I) {
  const std::string lost = cuda_context_lost(I.dev);
  if (!lost.empty()) throw std::runtime_error(lost);
  CK(cudaSetDevice(I.dev));
  const cudaError_t e = cudaGetLastError();
  if (cuda_sticky(e)) {
    mark_lost(I.dev, e);
    throw std::runtime_error(lost_message(I.dev, e));
  }
}

void rethrow_classified(CudaImpl& I) {
  std::string msg;
  try {
    throw;
  } catch (const std::exception& ex) {
    msg = ex.what();
  } catch (...) {
    msg = "unknown error";
  }
  if (msg.rfind(kCudaContextLostTag, 0) == 0) throw std::runtime_error(msg);
  // a fault of this operation shows on its own stream; a sticky one on every call
  const cudaError_t s = I.st ? cudaStreamSynchronize(I.st) : cudaSuccess;
  const cudaError_t l = cudaGetLastError();  // also clears a non-sticky one for the thread's next operation
  const cudaError_t e = cuda_sticky(s) ? s : cuda_sticky(l) ? l : cudaSuccess;
  if (e != cudaSuccess) {
    mark_lost(I.dev, e);
    throw std::runtime_error(lost_message(I.dev, e) + " (during: " + msg + ")");
  }
  // A failure inside CUDA, cuBLASLt or CUB that the runtime cannot prove harmless (anything but an
  // allocation that did not fit) may have left the context in a bad state: the process stops using
  // the GPU, as after a sticky error, and the work is retried on a fresh one.
  const bool cuda_side = msg.rfind("CUDA error in ", 0) == 0 || msg.find("cublasLtMatmul") != std::string::npos ||
                         msg.find("inside CUB") != std::string::npos;
  const bool harmless = msg.find("out of memory") != std::string::npos;
  if (cuda_side && !harmless) {
    mark_lost(I.dev, cudaErrorUnknown);
    throw std::runtime_error(std::string(kCudaContextLostTag) + " device " + std::to_string(I.dev) +
                             ", an error the runtime cannot prove harmless: " + msg + "; restart the process");
  }
  throw std::runtime_error(msg);
}

std::string cuda_inject_fault(int d) {
  if (d < 0 || d >= cuda_device_count()) return "no such device";
  cudaSetDevice(d);
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  k::trap_kernel<<<1, 1, 0, s>>>(nullptr);
  cudaError_t e = cudaStreamSynchronize(s);
  if (e == cudaSuccess) e = cudaGetLastError();
  if (cuda_sticky(e)) mark_lost(d, e);
  return error_text(e);
}

namespace lt {
const Api* load(std::string* why) {
  static std::once_flag once;
  static Api api;
  static bool ok = false;
  static std::string err;
  std::call_once(once, [] {
    std::vector<std::string> cands;
    if (const char* e = std::getenv("ABACUS_CUBLASLT")) cands.push_back(e);
    cands.push_back("libcublasLt.so.13");
    for (const char* home : std::vector<const char*>{std::getenv("CUDA_HOME"), std::getenv("CUDA_PATH"), "/usr/local/cuda"})
      if (home) cands.push_back(std::string(home) + "/lib64/libcublasLt.so.13");
    cands.push_back("/usr/local/cuda/targets/x86_64-linux/lib/libcublasLt.so.13");
    void* h = nullptr;
    for (auto& c : cands)
      if ((h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL))) { api.path = c; break; }
    if (!h) { err = "libcublasLt.so.13 not found (set ABACUS_CUBLASLT to its path)"; return; }
    auto sym = [&](const char* n) {
      void* p = dlsym(h, n);
      if (!p) err = std::string("cuBLASLt symbol missing: ") + n;
      return p;
    };
    api.create = (decltype(api.create))sym("cublasLtCreate");
    api.destroy = (decltype(api.destroy))sym("cublasLtDestroy");
    api.descCreate = (decltype(api.descCreate))sym("cublasLtMatmulDescCreate");
    api.descDestroy = (decltype(api.descDestroy))sym("cublasLtMatmulDescDestroy");
    api.descSet = (decltype(api.descSet))sym("cublasLtMatmulDescSetAttribute");
    api.layoutCreate = (decltype(api.layoutCreate))sym("cublasLtMatrixLayoutCreate");
    api.layoutDestroy = (decltype(api.layoutDestroy))sym("cublasLtMatrixLayoutDestroy");
    api.prefCreate = (decltype(api.prefCreate))sym("cublasLtMatmulPreferenceCreate");
    api.prefSet = (decltype(api.prefSet))sym("cublasLtMatmulPreferenceSetAttribute");
    api.prefDestroy = (decltype(api.prefDestroy))sym("cublasLtMatmulPreferenceDestroy");
    api.heuristic = (decltype(api.heuristic))sym("cublasLtMatmulAlgoGetHeuristic");
    api.matmul = (decltype(api.matmul))sym("cublasLtMatmul");
    ok = err.empty();
  });
  if (!ok && why) *why = err;
  return ok ? &api : nullptr;
}
}  // namespace lt

void cuda_set_next_device(int d) { g_next_device = d; }
int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) { cudaGetLastError(); return 0; }
  return n;
}
std::string cuda_device_name(int d) {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, d) != cudaSuccess) return "";
  return p.name;
}
std::string cuda_status_line() {
  std::string why;
  int n = cuda_device_count();
  if (n == 0) return "no CUDA device visible";
  if (!lt::load(&why)) return why;
  return "ok";
}

CudaModel::CudaModel(const ModelConfig& cfg) : host_(new CpuModel(cfg)), impl_(new CudaImpl) {
  std::string why;
  CudaImpl& I = *impl_;
  I.api = lt::load(&why);
  if (!I.api) throw std::runtime_error("CUDA backend: " + why);
  const int ndev = cuda_device_count();
  if (ndev == 0) throw std::runtime_error("CUDA backend: no CUDA device visible");
  I.dev = g_next_device;
  if (I.dev < 0 || I.dev >= ndev) throw std::runtime_error("CUDA backend: device " + std::to_string(I.dev) + " out of range (" + std::to_string(ndev) + " visible)");
  try {
    enter(I);
    init(cfg);
  } catch (...) {
    rethrow_classified(I);
  }
}

void CudaModel::init(const ModelConfig& cfg) {
  CudaImpl& I = *impl_;
  CK(cudaStreamCreateWithFlags(&I.st, cudaStreamNonBlocking));
  I.lt = shared_lt_handle(I.api, I.dev);
  I.ws = dalloc<uint8_t>(I.ws_bytes, false);
  const char* m = std::getenv("ABACUS_CUDA_MATH");
  I.tf32 = !(m && std::string(m) == "fp32");  // TF32 GEMMs by default (AUC unchanged on ctr26)
  const char* ep = std::getenv("ABACUS_CUDA_EVAL_PRECISION");
  I.bf16eval = I.tf32 && cfg.hidden.size() >= 2 && !(ep && std::string(ep) == "tf32");
  if (const char* at = std::getenv("ABACUS_CUDA_AUTOTUNE")) I.autotune = std::string(at) == "1";
  const char* pe = std::getenv("ABACUS_CUDA_PROFILE");
  I.prof = pe && std::string(pe) == "1";
  const char* ne = std::getenv("ABACUS_CUDA_NO_EPILOGUE");
  I.use_epi = !(ne && std::string(ne) == "1");
  I.N = cfg.num_numeric;
  I.S = (int)cfg.vocab.size();
  I.D = cfg.dim;
  I.L = (int)cfg.hidden.size();
  I.in0 = I.N + I.S * I.D;
  I.ld0 = (int)round_up(I.in0, 4);
  I.k0 = I.L > 0 ? I.ld0 : I.in0;
  I.wide = cfg.wide;
  I.mean = cfg.mean;
  I.adam = cfg.sparse.kind == 1;
  I.state0 = I.adam ? 0.f : cfg.sparse.init_acc;
  I.sp = cfg.sparse;
  I.vocab = cfg.vocab;
  I.dn = cfg.dense;
  std::vector<int64_t> hb;
  for (int s = 0; s < I.S; ++s) { hb.push_back(I.rows); I.rows += cfg.vocab[s]; }
  int64_t off = 0;
  for (int l = 0; l <= I.L; ++l) {
    I.in_dim.push_back(l == 0 ? I.in0 : cfg.hidden[l - 1]);
    I.out_dim.push_back(l < I.L ? cfg.hidden[l] : 1);
    I.w_off.push_back(off);
    off += (int64_t)I.kdim(l) * I.out_dim[l];
    I.b_off.push_back(off);
    off += I.out_dim[l];
  }
  I.wide_num_off = off;
  if (cfg.wide) off += I.N;
  I.nd = off;
  I.pad0 = (int64_t)(I.k0 - I.in0) * I.out_dim[0];
  // the tables and their sparse state on the device, or a cache of their rows over host memory
  // (emb_cache.cu) when they would take more than ABACUS_HBM_BUDGET_GB (ABACUS_CUDA_CACHE_ROWS: a
  // cache of that many rows, whatever the tables' size)
  const int64_t row_bytes = (int64_t)(I.D + (I.wide ? 1 : 0)) * 4 * (I.adam ? 3 : 2);
  I.hbase = hb;
  I.P = 1;
  if (!cfg.cache_load.empty()) {
    // per-table load factors: a part of the cache for each table, its share of the table's rows
    if ((int)cfg.cache_load.size() != I.S)
      throw std::runtime_error("cacheLoadFactors: " + std::to_string(cfg.cache_load.size()) + " factors for " + std::to_string(I.S) + " slots");
    I.cached = true;
    I.P = I.S;
    I.pc0_h.assign(1, 0);
    for (int s = 0; s < I.S; ++s) {
      const double f = cfg.cache_load[s];
      if (!(f > 0 && f <= 1)) throw std::runtime_error("cacheLoadFactors[" + std::to_string(s) + "]: " + std::to_string(f) + " is not in (0, 1]");
      const int64_t v = cfg.vocab[s];
      I.pc0_h.push_back(I.pc0_h.back() + std::max<int64_t>(1, std::min<int64_t>(v, (int64_t)std::ceil(f * (double)v))));
    }
    I.crows = I.pc0_h.back();
  } else if (const char* cr = std::getenv("ABACUS_CUDA_CACHE_ROWS"); cr && *cr) {
    const long long v = std::atoll(cr);
    if (v <= 0) throw std::runtime_error(std::string("ABACUS_CUDA_CACHE_ROWS: '") + cr + "' is not a positive number of rows");
    I.cached = true;
    I.crows = std::min<int64_t>(v, I.rows);
  } else {
    // the budget: ABACUS_HBM_BUDGET_GB, else half the device memory free when the model is made (a
    // model whose tables would not fit beside the work already on the GPU offloads them by itself)
    double budget = 0;
    if (const char* hb_gb = std::getenv("ABACUS_HBM_BUDGET_GB"); hb_gb && *hb_gb) {
      const double gb = std::atof(hb_gb);
      if (!(gb > 0)) throw std::runtime_error(std::string("ABACUS_HBM_BUDGET_GB: '") + hb_gb + "' is not a positive number of GiB");
      budget = gb * 1073741824.0;
    } else {
      size_t free_b = 0, total_b = 0;
      CK(cudaMemGetInfo(&free_b, &total_b));
      budget = 0.5 * (double)free_b;
    }
    if ((double)I.rows * row_bytes > budget) {
      I.cached = true;
      I.crows = std::max<int64_t>(1, std::min<int64_t>(I.rows, (int64_t)(budget / row_bytes)));
    }
  }
  const int64_t R = I.cached ? I.crows : I.rows, D = I.D;
  if (I.cached && I.rows >= (int64_t)0xffffffff)
    throw std::runtime_error("offloaded tables: " + std::to_string(I.rows) + " table rows; at most 4294967294 are supported");
  if (I.cached && I.crows > (int64_t)INT32_MAX)
    throw std::runtime_error("offloaded tables: a device cache of " + std::to_string(I.crows) + " rows; at most 2147483647 are supported");
  if (I.cached) {
    // the parts: one a table with load factors, else one over every table
    I.prow_h.assign(1, 0);
    if (I.P > 1)
      for (int s = 0; s < I.S; ++s) I.prow_h.push_back(I.prow_h.back() + cfg.vocab[s]);
    else {
      I.prow_h.push_back(I.rows);
      I.pc0_h = {0, I.crows};
    }
    I.last_seen_p.assign((size_t)I.P, 0);
    I.dprow = dalloc<int64_t>(2 * ((size_t)I.P + 1), false);
    copy_sync(I.dprow, I.prow_h.data(), (I.P + 1) * 8, cudaMemcpyHostToDevice);
    copy_sync(I.dprow + I.P + 1, I.pc0_h.data(), (I.P + 1) * 8, cudaMemcpyHostToDevice);
    I.dmap = dalloc<int32_t>((size_t)I.rows, false);
    CK(cudaMemsetAsync(I.dmap, 0xff, (size_t)I.rows * 4, cudaStreamPerThread));
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    I.slot_row = dalloc<uint32_t>((size_t)I.crows, false);
    I.slot_tick = dalloc<int32_t>((size_t)I.crows, false);
    I.slot_pass = dalloc<int32_t>((size_t)I.crows, false);
    I.cache_hand = dalloc<int32_t>((size_t)I.P);
    I.cache_wb = dalloc<unsigned long long>(1);
    CK(cudaMemsetAsync(I.slot_row, 0xff, (size_t)I.crows * 4, cudaStreamPerThread));
    CK(cudaMemsetAsync(I.slot_tick, 0xff, (size_t)I.crows * 4, cudaStreamPerThread));
    CK(cudaMemsetAsync(I.slot_pass, 0xff, (size_t)I.crows * 4, cudaStreamPerThread));
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    if (std::getenv("ABACUS_CUDA_VERBOSE"))
      fprintf(stderr, "[abacus-cuda] embedding tables in host memory (%.3f GiB with their sparse state), a device cache of %lld of %lld rows (%.3f GiB)%s\n",
              (double)I.rows * row_bytes / 1073741824.0, (long long)I.crows, (long long)I.rows, (double)I.crows * row_bytes / 1073741824.0,
              I.P > 1 ? ", a part for each table (load factors)" : "");
  }
  I.table = dalloc<float>(R * D, false);
  I.spm = dalloc<float>(R * D, false);
  if (I.adam) I.spv = dalloc<float>(R * D, false);
  if (I.wide) {
    I.wtab = dalloc<float>(R, false);
    I.wspm = dalloc<float>(R, false);
    if (I.adam) I.wspv = dalloc<float>(R, false);
  }
  // G / WG / flag / touched (the gradient-table path) are allocated only when it is used
  if (const char* eb = std::getenv("ABACUS_CUDA_EVAL_BATCH")) I.eval_min = std::max<long long>(1, std::atoll(eb));
  const char* spe = std::getenv("ABACUS_CUDA_SPARSE");
  I.sparse_atomic = spe && std::string(spe) == "atomic";
  I.counter = dalloc<int>(1);
  I.dense = dalloc<float>(I.nd);
  I.dm = dalloc<float>(I.nd);
  I.dv = dalloc<float>(I.nd);
  I.dg = dalloc<float>(I.nd);
  I.nmean = dalloc<float>(std::max(1, I.N), false);
  I.nstd = dalloc<float>(std::max(1, I.N), false);
  I.base = dalloc<int64_t>(std::max(1, I.S), false);
  copy_sync(I.base, hb.data(), hb.size() * 8, cudaMemcpyHostToDevice);
  I.dfrozen = dalloc<uint8_t>(std::max(1, I.S));
  I.doff = dalloc<uint8_t>(std::max(1, I.N + I.S));
  I.d_step = dalloc<int64_t>(1);
  I.d_cursor = dalloc<int64_t>(1);
  I.d_b0 = dalloc<int64_t>(1);
  I.d_stepidx = dalloc<int>(1);
  I.d_wsum = dalloc<double>(1);
  frozen.assign(I.S, 0);
  this->off.assign(I.N + I.S, 0);
  I.upload_needed = true;
}

CudaModel::~CudaModel() = default;

CudaImpl::~CudaImpl() {
  cudaSetDevice(dev);
  if (st) cudaStreamSynchronize(st);
  cache_release();
  if (dmap) cudaFree(dmap);
  for (auto& g : graphs) cudaGraphExecDestroy(g.exec);
  for (auto& kv : plans) {
    if (kv.second.desc) api->descDestroy(kv.second.desc);
    if (kv.second.a) api->layoutDestroy(kv.second.a);
    if (kv.second.b) api->layoutDestroy(kv.second.b);
    if (kv.second.c) api->layoutDestroy(kv.second.c);
  }
  cache.clear();
  for (auto& g : stage) {
    if (g.pin) cudaFreeHost(g.pin);
    if (g.dev) cudaFree(g.dev);
    if (g.raw) cudaFree(g.raw);
    if (g.copied) cudaEventDestroy(g.copied);
    if (g.consumed) cudaEventDestroy(g.consumed);
  }
  if (cs) cudaStreamDestroy(cs);
  // device memory is released with the context's allocations below
  for (void* p : std::initializer_list<void*>{table, wtab, dense, dm, dv, dg, spm, spv, wspm, wspv, nmean, nstd, G, WG,
                                               flag, touched, counter, base, dfrozen, doff, d_step, d_cursor, d_b0, d_stepidx,
                                               d_wsum, d_losses, H0, logit, dlogit, widev, hpart, lab, wt, bagscale, demb, dZa,
                                               dZb, zbase, dwide, d_order, ws, pred_buf, skeys, skeys2, svals, svals2, sort_tmp, slead, sleadw, d_cnt, scan_tmp})
    if (p) cudaFree(p);
  for (auto* p : H) cudaFree(p);
  for (auto* p : aux) cudaFree(p);
  if (hperm32) cudaFreeHost(hperm32);
  free_bf16_acts();
  for (auto* p : Wb) if (p) cudaFree(p);
  for (auto* p : Bb) if (p) cudaFree(p);
  for (auto& kv : scr) if (kv.second.first) cudaFree(kv.second.first);
  if (pin) cudaFreeHost(pin);
  // the cuBLASLt handle is the device's shared one (shared_lt_handle): not destroyed here
  if (st) cudaStreamDestroy(st);
  // a finalizer's errors (e.g. on a lost context) must not leak into the next operation of this thread
  cudaGetLastError();
}

// ---- the public operations: context checked first, errors classified (see cuda_impl.cuh) ----
TrainResult CudaModel::train(const DataSource& tr, const DataSource* val, const TrainOptions& o,
                             const std::function<void(const Progress&)>& progress) {
  enter(*impl_);
  try {
    return train_(tr, val, o, progress);
  } catch (...) {
    rethrow_classified(*impl_);
  }
}
void CudaModel::predict(const DataSource& ds, int64_t batch, float* pred, float* label, float* weight, int32_t* key) {
  enter(*impl_);
  try {
    predict_(ds, batch, pred, label, weight, key);
  } catch (...) {
    rethrow_classified(*impl_);
  }
}
void CudaModel::predict_lean(const DataSource& ds, int64_t batch, float* pred) {
  enter(*impl_);
  try {
    predict_lean_(ds, batch, pred);
  } catch (...) {
    rethrow_classified(*impl_);
  }
}
void CudaModel::evaluate_device(const DataSource& ds, int64_t batch, double* out) {
  enter(*impl_);
  try {
    evaluate_device_(ds, batch, out);
  } catch (...) {
    rethrow_classified(*impl_);
  }
}
void CudaModel::ablate(const DataSource& ds, const std::vector<AblationGroup>& groups, int repeats, uint64_t seed,
                       int64_t batch, Metrics& base, std::vector<Metrics>& out, std::vector<Metrics>* base_folds,
                       std::vector<Metrics>* out_folds, int folds) {
  enter(*impl_);
  try {
    ablate_(ds, groups, repeats, seed, batch, base, out, base_folds, out_folds, folds);
  } catch (...) {
    rethrow_classified(*impl_);
  }
}

const char* CudaModel::eval_precision() const { return impl_->bf16eval ? "bf16" : impl_->tf32 ? "tf32" : "fp32"; }

}  // namespace abacus
